// The first finding with an id, for tests that look one up among a report's findings.
#pragma once

#include "rocplay/core/finding.hpp"

#include <string_view>
#include <vector>

namespace rocplay::test {

inline const Finding* finding_of(const std::vector<Finding>& findings, std::string_view id) {
  for (const auto& f : findings) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

} // namespace rocplay::test
