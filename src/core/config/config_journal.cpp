// SPDX-License-Identifier: Apache-2.0
// The journal: section of the configuration: where the glitch journal (SQLite) lives and how
// much of it is kept.
#include "core/config/config.h"
#include "core/config/config_reader.h"

namespace tailcause::core {

void journal_section(Reader& r, const YAML::Node& n, const std::string& k, JournalSettings& j) {
  r.mapping(
      n, k,
      {{"path",
        [&](const YAML::Node& v, const std::string& kk) { j.path = r.path_or_empty(v, kk); }},
       {"max_age_h", [&](const YAML::Node& v,
                         const std::string& kk) { j.max_age_h = r.positive(v, kk, 24 * 3650); }},
       {"max_mb", [&](const YAML::Node& v, const std::string& kk) {
          j.max_mb = r.positive(v, kk, 1024 * 1024);
        }}});
}

}  // namespace tailcause::core
