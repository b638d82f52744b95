#pragma once
/// A Report (report/document.h) as one self-contained HTML file: no network,
/// no external script, font or image, so it opens from a USB stick and prints.
///
/// - A Content-Security-Policy meta tag allows nothing but the document's own
///   stylesheet and script, each named by its SHA-256 hash: any accidental
///   request (an image, a font, a fetch) is blocked by the browser and shows as
///   a console error instead of leaving the machine.
/// - Light and dark mode through CSS variables and `prefers-color-scheme`;
///   print CSS forces the light palette, opens collapsed parts and hides buttons.
/// - Responsive: one column, charts scale with the page (their text grows on
///   narrow screens), wide tables scroll inside their own box.
/// - Every chart has a data table associated with it (aria-describedby) in a
///   <details> element under it, and a legend that names shapes, not only colours.
/// - The only script: copy buttons for commands, and opening <details> before
///   printing. Without scripts the page reads the same (the buttons stay hidden).

#include <string>

#include "report/document.h"
#include "report/html_assets.h"

namespace moetune {

std::string RenderHtml(const Report& report);

}  // namespace moetune
