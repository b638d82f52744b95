#pragma once
/// The stylesheet and the script embedded in every HTML report, and the
/// Content-Security-Policy that allows exactly them.

#include <string>

namespace moetune {

const std::string& ReportStylesheet();
const std::string& ReportScript();
std::string ReportContentSecurityPolicy();

}  // namespace moetune
