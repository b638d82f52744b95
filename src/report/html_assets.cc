// The stylesheet and script every HTML report embeds (report/html_assets.h).
// System fonts only; colours from the Okabe-Ito palette, which stays distinct
// for the common colour-vision deficiencies; shapes (dashes, rings, crosses,
// hollow points) carry the meaning as well, never colour alone.
#include "report/html_assets.h"

#include <string>

#include "util/sha256.h"

namespace moetune {

namespace {

// The stylesheet in parts, concatenated in this order (the cascade's).
// The colours: light, dark and print.
constexpr char kPaletteCss[] = R"CSS(
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#59636e;--grid:#e3e8ee;--axis:#818b98;
--box:#f6f8fa;--border:#d1d9e0;--accent:#0a5fb4;--bad:#c62828;--warn:#8a5a00;--good:#1a7f37;
--c0:#0072b2;--c1:#d55e00;--c2:#009e73;--c3:#cc79a7;--c4:#b07800;--c5:#56b4e9;
--s-weights:#4477aa;--s-experts:#66ccee;--s-kv:#228833;--s-state:#ccbb44;--s-compute:#ee6677;
--s-margin:#bbbbbb;--s-others:#aa3377;--s-over:#c62828;--s-shexp:#6f62c8;--s-dense:#117733;
--s-recur:#999933;--s-head:#882255;--s-otherw:#44aa99;--seg-text:#111}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--grid:#262c36;
--axis:#6e7681;--box:#161b22;--border:#3d444d;--accent:#58a6ff;--bad:#ff6b6b;--warn:#e3b341;
--good:#3fb950;--c0:#56b4e9;--c1:#ff8c42;--c2:#2fd3a4;--c3:#e59acb;--c4:#f0c050;--c5:#9fd8f5;
--s-weights:#6f9bd1;--s-experts:#7fd6f2;--s-kv:#4cae5c;--s-state:#d9ca5b;--s-compute:#f08090;
--s-margin:#8b949e;--s-others:#c65a98;--s-over:#ff6b6b;--s-shexp:#9d92e8;--s-dense:#3aa35a;
--s-recur:#c2c25a;--s-head:#c0507a;--s-otherw:#5cc4b2}}
@media print{:root{--bg:#fff;--fg:#000;--muted:#444;--grid:#ddd;--axis:#666;--box:#f4f4f4;
--border:#bbb;--accent:#0a5fb4;--bad:#b00020;--good:#1a7f37;--c0:#0072b2;--c1:#d55e00;
--c2:#009e73;--c3:#cc79a7;--c4:#b07800;--c5:#56b4e9}})CSS";

// The page: text, headings, code, the verdict, copy buttons, figures.
constexpr char kPageCss[] = R"CSS(
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0 auto;max-width:980px;padding:16px 20px 40px;background:var(--bg);color:var(--fg);
font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Liberation Sans",sans-serif}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;margin:1.6em 0 .5em;
border-bottom:1px solid var(--border);padding-bottom:.2em}
.sub{color:var(--muted);margin:0 0 .8em}
a{color:var(--accent)}
nav.toc{font-size:.92em;margin:.5em 0 1em}nav.toc a{margin-right:1em;white-space:nowrap}
code,pre,kbd{font-family:ui-monospace,"SFMono-Regular","DejaVu Sans Mono",Menlo,Consolas,monospace;
font-size:.9em}
pre{background:var(--box);border:1px solid var(--border);border-radius:6px;padding:10px 12px;
margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
.verdict{border:2px solid var(--good);border-radius:10px;padding:14px 16px;margin:1em 0;
background:var(--box)}
.verdict .headline{font-size:1.25em;font-weight:650;margin:0 0 .4em}
.verdict .banner{color:var(--bad)}
.verdict .speedup{font-size:1.1em;color:var(--good);font-weight:600;margin:.2em 0}
.verdict .reason{margin:.6em 0 0}
.cmd{position:relative;margin:.4em 0}
.cmd pre{padding-right:5.5em}
button.copy{position:absolute;top:6px;right:6px;font:inherit;font-size:.85em;padding:3px 10px;
border:1px solid var(--border);border-radius:6px;background:var(--bg);color:var(--fg);cursor:pointer}
button.copy:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
.label{font-weight:600;margin:.8em 0 .2em}
figure{margin:1.2em 0;padding:0}
figcaption{margin:0 0 .4em})CSS";

// Charts (SVG), stacked memory bars and legends.
constexpr char kChartCss[] = R"CSS(
.chartbox{width:100%}
svg.chart{display:block;width:100%;height:auto;overflow:visible}
svg.chart text{fill:var(--fg);font-size:12px;font-family:inherit}
svg.chart .tick{fill:var(--muted);font-size:11px}
svg.chart .ptitle{font-weight:650;font-size:13px}
svg.chart .alabel{fill:var(--muted)}
svg.chart .mlabel{font-size:11px;font-weight:600}
@media (max-width:600px){svg.chart text{font-size:19px}svg.chart .tick{font-size:18px}
svg.chart .ptitle{font-size:20px}svg.chart .mlabel{font-size:18px}svg.chart .axnote{font-size:18px}}
.grid{stroke:var(--grid);stroke-width:1}
.axis{stroke:var(--axis);stroke-width:1}
.axis-gap{fill:var(--bg);stroke:none}.axis-break{fill:none;stroke:var(--axis);stroke-width:1.5}
svg.chart .axnote{fill:var(--muted);font-size:11px;font-style:italic}
.chart .line{fill:none;stroke-width:2.2}
.chart .line.dashed{stroke-dasharray:7 5;stroke-width:2}
.c0{stroke:var(--c0);fill:var(--c0)}.c1{stroke:var(--c1);fill:var(--c1)}
.c2{stroke:var(--c2);fill:var(--c2)}.c3{stroke:var(--c3);fill:var(--c3)}
.c4{stroke:var(--c4);fill:var(--c4)}.c5{stroke:var(--c5);fill:var(--c5)}
.chart .err{stroke-width:1.4}
.chart .dot{stroke:var(--bg);stroke-width:1}
.chart .dot.hollow{fill:var(--bg);stroke:var(--bad);stroke-width:2}
.chart .ring{fill:none;stroke:var(--good);stroke-width:2.6}
.chart .failx{fill:none;stroke:var(--bad);stroke-width:2.6;stroke-linecap:round}
.chart .mline{stroke-dasharray:4 3;stroke-width:1.6;stroke:var(--muted)}
.mk-cliff .mline{stroke:var(--bad)}.mk-cliff text{fill:var(--bad)}
.mk-pick .mline{stroke:var(--good)}.mk-pick text{fill:var(--good)}
.chart .limit{stroke:var(--bad);stroke-dasharray:8 4;stroke-width:1.6}
.seg rect{stroke:var(--bg);stroke-width:1}
.seg-weights rect{fill:var(--s-weights)}.seg-experts rect{fill:var(--s-experts)}
.seg-kv rect{fill:var(--s-kv)}.seg-state rect{fill:var(--s-state)}
.seg-compute rect{fill:var(--s-compute)}.seg-margin rect{fill:var(--s-margin)}
.seg-others rect{fill:var(--s-others)}.seg-over rect{fill:var(--s-over)}
.seg-shexp rect{fill:var(--s-shexp)}.seg-dense rect{fill:var(--s-dense)}
.seg-recur rect{fill:var(--s-recur)}.seg-head rect{fill:var(--s-head)}
.seg-otherw rect{fill:var(--s-otherw)}
.seg-free rect{fill:none;stroke:var(--axis);stroke-dasharray:3 2}
svg.chart .seglabel{fill:var(--seg-text);font-size:11px}
ul.legend{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:.2em 1.1em;
font-size:.9em}
ul.legend li{display:flex;align-items:center;gap:.4em}
.sw{display:inline-block;width:22px;height:12px;flex:none}
.sw.line{height:0;border-top:3px solid}.sw.dot{width:10px;height:10px;border-radius:50%;background:currentColor}.sw.line.dashed{border-top-style:dashed}
.sw.c0{border-color:var(--c0);color:var(--c0)}.sw.c1{border-color:var(--c1);color:var(--c1)}
.sw.c2{border-color:var(--c2);color:var(--c2)}.sw.c3{border-color:var(--c3);color:var(--c3)}
.sw.c4{border-color:var(--c4);color:var(--c4)}.sw.c5{border-color:var(--c5);color:var(--c5)}
.sw.ring{width:14px;height:14px;border:3px solid var(--good);border-radius:50%}
.sw.hollow{width:12px;height:12px;border:2px solid var(--bad);border-radius:50%}
.sw.cross{width:auto;height:auto;color:var(--bad);font-weight:700;line-height:1}
.sw.errbar{width:3px;height:14px;background:var(--muted)}
.sw.mk-cliff{height:0;border-top:2px dashed var(--bad)}
.sw.mk-pick{height:0;border-top:2px dashed var(--good)}
.sw.limit{height:0;border-top:2px dashed var(--bad)}
.sw.block{border:1px solid var(--border)}
.sw.seg-weights{background:var(--s-weights)}.sw.seg-experts{background:var(--s-experts)}
.sw.seg-kv{background:var(--s-kv)}.sw.seg-state{background:var(--s-state)}
.sw.seg-compute{background:var(--s-compute)}.sw.seg-margin{background:var(--s-margin)}
.sw.seg-others{background:var(--s-others)}.sw.seg-over{background:var(--s-over)}
.sw.seg-shexp{background:var(--s-shexp)}.sw.seg-dense{background:var(--s-dense)}
.sw.seg-recur{background:var(--s-recur)}.sw.seg-head{background:var(--s-head)}
.sw.seg-otherw{background:var(--s-otherw)}
.sw.seg-free{background:none;border:1px dashed var(--axis)})CSS";

// Tables, details, key-value lists, warnings, the footer, small screens and print.
constexpr char kTableCss[] = R"CSS(
.tablebox{overflow-x:auto;margin:.4em 0}
table{border-collapse:collapse;font-size:.92em;font-variant-numeric:tabular-nums;min-width:50%}
caption{text-align:left;font-weight:600;padding:.2em 0}
th,td{border-bottom:1px solid var(--border);padding:4px 10px;text-align:left;vertical-align:top}
th{background:var(--box)}
td.num,th.num{text-align:right;white-space:nowrap}
tr.pick td{background:color-mix(in srgb,var(--good) 16%,transparent);font-weight:600}
tr.rejected td,tr.failed td{color:var(--muted)}
tr.failed td:first-child::after{content:" \2715";color:var(--bad)}
details{margin:.5em 0}
summary{cursor:pointer;color:var(--accent)}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:.4em 0}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;overflow-wrap:anywhere}
ul.warnings{padding-left:1.2em}ul.warnings li::marker{content:"\26A0\FE0E  ";color:var(--warn)}
footer{margin-top:2.5em;color:var(--muted);font-size:.85em}
@media (max-width:600px){body{padding:10px 12px 30px;font-size:15px}h1{font-size:1.35em}
th,td{padding:3px 6px}dl.kv{grid-template-columns:1fr}dl.kv dd{margin-bottom:.4em}
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:100%}
table.stack thead{display:none}table.stack tr{border-bottom:1px solid var(--border);padding:.4em 0}
table.stack td{border:0;padding:1px 0}
table.stack td::before{content:attr(data-label) ": ";color:var(--muted)}}
@media print{body{max-width:none;padding:0;font-size:10.5pt}nav.toc,button.copy{display:none}
figure,table,.verdict{break-inside:avoid}h2{break-after:avoid}a{color:inherit}
summary{color:inherit}}
)CSS";

}  // namespace

const std::string& ReportStylesheet() {
  static const std::string kCss = std::string(kPaletteCss) + kPageCss + kChartCss + kTableCss;
  return kCss;
}

const std::string& ReportScript() {
  // Copy buttons (hidden until this runs, so a page without scripts shows none)
  // and every <details> opened before printing. Sets data-ready on <html> so
  // that tests can tell the script ran under the Content-Security-Policy.
  static const std::string kJs = R"JS(
(function(){
function copyText(button,text){
function done(){button.textContent="Copied";setTimeout(function(){button.textContent="Copy";},1500);}
function fallback(){var r=document.createRange();r.selectNodeContents(document.getElementById(button.getAttribute("data-target")));
var s=window.getSelection();s.removeAllRanges();s.addRange(r);try{document.execCommand("copy");done();}catch(e){button.textContent="Select and copy";}}
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(text).then(done,fallback);}else{fallback();}}
var buttons=document.querySelectorAll("button.copy");
for(var i=0;i<buttons.length;i++){(function(b){b.hidden=false;b.addEventListener("click",function(){
var t=document.getElementById(b.getAttribute("data-target"));if(t){copyText(b,t.textContent);}});})(buttons[i]);}
window.addEventListener("beforeprint",function(){var d=document.querySelectorAll("details");
for(var j=0;j<d.length;j++){d[j].open=true;}});
document.documentElement.setAttribute("data-ready","1");
})();
)JS";
  return kJs;
}

std::string ReportContentSecurityPolicy() {
  auto hash = [](const std::string& text) {
    const auto d = Sha256(text);
    return "'sha256-" + Base64(std::string(d.begin(), d.end())) + "'";
  };
  // default-src 'none' blocks every fetch (images, fonts, frames, connections);
  // the stylesheet and the script are allowed by hash, nothing else by name.
  return "default-src 'none'; style-src " + hash(ReportStylesheet()) + "; script-src " +
         hash(ReportScript()) + "; base-uri 'none'; form-action 'none'";
}

}  // namespace moetune
