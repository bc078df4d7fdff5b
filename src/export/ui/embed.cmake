# SPDX-License-Identifier: Apache-2.0
# Writes OUT, a C++ header holding UI_DIR/index.html as kUiPage (a raw string literal), so the
# daemon serves its page with no file on disk and nothing fetched at run time.
file(READ ${UI_DIR}/index.html page)
string(FIND "${page}" ")tcui\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "index.html contains the raw-string delimiter )tcui\"")
endif()
file(WRITE ${OUT}.tmp "// Generated from src/export/ui/index.html by embed.cmake: do not edit.\n#pragma once\n#include <string_view>\n\nnamespace tailcause::exporter {\ninline constexpr std::string_view kUiPage = R\"tcui(${page})tcui\";\n}  // namespace tailcause::exporter\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
