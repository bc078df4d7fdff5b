// SPDX-License-Identifier: Apache-2.0
#include "core/config/config_yaml.h"

#include <fmt/format.h>
#include <yaml.h>

#include <memory>

#include "core/config/config.h"

namespace tailcause::core {
namespace {

// One pass over libyaml's event stream: structure, depth and size, no nodes built.
void prescan(std::string_view text, std::string_view source) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) throw ConfigError(fmt::format("{}: out of memory", source));
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> guard(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  size_t depth = 0, events = 0, documents = 0;
  // A document after the first may say nothing (an editor's trailing "---"), no more.
  auto content = [&](int line) {
    if (documents > 1) {
      throw ConfigError(
          fmt::format("{}:{}: (top level): expected one YAML document, found "
                      "another",
                      source, line));
    }
  };
  for (;;) {
    yaml_event_t event;
    if (!yaml_parser_parse(&parser, &event)) {
      const auto& mark = parser.problem_mark;
      throw ConfigError(fmt::format("{}:{}: invalid YAML: {}", source, mark.line + 1,
                                    parser.problem ? parser.problem : "syntax error"));
    }
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> held(&event, yaml_event_delete);
    const int line = static_cast<int>(event.start_mark.line) + 1;
    if (++events > kMaxYamlEvents) {
      throw ConfigError(
          fmt::format("{}:{}: too many YAML nodes (more than {})", source, line, kMaxYamlEvents));
    }
    switch (event.type) {
      case YAML_STREAM_END_EVENT: return;
      case YAML_DOCUMENT_START_EVENT: ++documents; break;
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT:
        content(line);
        if (++depth > kMaxYamlDepth) {
          throw ConfigError(
              fmt::format("{}:{}: nested deeper than {} levels", source, line, kMaxYamlDepth));
        }
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: --depth; break;
      case YAML_SCALAR_EVENT:
        if (event.data.scalar.length != 0 || !event.data.scalar.plain_implicit) {
          content(line);
        }
        break;
      case YAML_ALIAS_EVENT: content(line); break;
      default: break;
    }
  }
}

}  // namespace

YAML::Node load_yaml_document(std::string_view text, std::string_view source) {
  if (text.size() > kMaxConfigBytes) {
    throw ConfigError(fmt::format("{}: {} bytes, more than the {} a configuration may hold", source,
                                  text.size(), kMaxConfigBytes));
  }
  prescan(text, source);
  try {
    // Load, not LoadAll: the prescan has refused a second document already.
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}: invalid YAML: {}", source, e.mark.line + 1, e.msg));
  }
}

}  // namespace tailcause::core
