// docs/json-schema.md against what the report writers emit: the keys a schema's table documents,
// and the keys a set of emitted objects holds, written the same way (`a`, `a[].b`, `a.b`).
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace rocplay::testing {

// Every backticked name in the first cell of each row of the first table after the heading that
// contains `heading` (up to the next heading). Throws when there is no such heading or table.
inline std::set<std::string> documented_keys(const std::string& heading) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/docs/json-schema.md");
  std::string line;
  bool in_section = false;
  bool in_table = false;
  std::set<std::string> keys;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) {
      if (in_section) {
        break;
      }
      in_section = line.find(heading) != std::string::npos;
      continue;
    }
    if (!in_section) {
      continue;
    }
    if (line.rfind('|', 0) != 0) {
      if (in_table) {
        break;
      }
      continue;
    }
    in_table = true;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    for (std::size_t open = cell.find('`'); open != std::string::npos;) {
      const std::size_t close = cell.find('`', open + 1);
      if (close == std::string::npos) {
        break;
      }
      keys.insert(cell.substr(open + 1, close - open - 1));
      open = cell.find('`', close + 1);
    }
  }
  if (keys.empty()) {
    throw std::runtime_error("docs/json-schema.md: no table of keys under a heading with " +
                             heading);
  }
  return keys;
}

// The keys of `objects` (their union), as `documented` writes them: a key whose parts the doc
// documents (`k[].x` for an array of objects, `k.x` for an object) is replaced by its parts.
inline std::set<std::string> emitted_keys(const std::vector<nlohmann::json>& objects,
                                          const std::set<std::string>& documented) {
  auto has_prefix = [&documented](const std::string& prefix) {
    auto it = documented.lower_bound(prefix);
    return it != documented.end() && it->rfind(prefix, 0) == 0;
  };
  std::set<std::string> keys;
  for (const auto& object : objects) {
    for (const auto& [key, value] : object.items()) {
      if (has_prefix(key + "[].")) {
        for (const auto& element : value) {
          for (const auto& [part, unused] : element.items()) {
            keys.insert(key + "[]." + part);
          }
        }
      } else if (has_prefix(key + ".")) {
        for (const auto& [part, unused] : value.items()) {
          keys.insert(key + "." + part);
        }
      } else {
        keys.insert(key);
      }
    }
  }
  return keys;
}

} // namespace rocplay::testing
