// Enum names from one table each (simdjson's error table): a constexpr array of {enumerator,
// name} rows gives both `to_string` (name_of) and its inverse (value_of), so a name is written
// once and the two directions cannot drift. Header-only; every layer may use it.
//
//   constexpr NameTable<QueueType, 5> kQueueTypeNames{{{QueueType::Unknown, "Unknown"}, ...}};
//   static_assert(names_cover(kQueueTypeNames, QueueType::Xgmi));
//
// The static_assert takes the place of the switch's -Wswitch check: it fails when a row is
// missing, out of order or names an enumerator twice, and when two rows share a name. C++ cannot
// count an enum's enumerators, so an enumerator added after `last` must move `last` too (each
// layer's unit tests walk every enumerator's name against the strings reports and docs use).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace rocplay {

// One row per enumerator, in declaration order.
template <class E, std::size_t N> using NameTable = std::array<std::pair<E, std::string_view>, N>;

namespace names_detail {
template <class E> constexpr std::size_t index_of(E value) {
  return static_cast<std::size_t>(static_cast<std::underlying_type_t<E>>(value));
}
} // namespace names_detail

// True when row i names the enumerator whose value is i, for every enumerator from the first
// (value 0) to `last`, and no two rows share a name: name_of is then an index and value_of its
// exact inverse. For a static_assert beside each table.
template <class E, std::size_t N> constexpr bool names_cover(const NameTable<E, N>& table, E last) {
  if (names_detail::index_of(last) + 1 != N) {
    return false;
  }
  for (std::size_t i = 0; i < N; ++i) {
    if (names_detail::index_of(table[i].first) != i) {
      return false;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (table[j].second == table[i].second) {
        return false;
      }
    }
  }
  return true;
}

// The name of `value`; `fallback` for a value no row names (a cast from a bad integer).
template <class E, std::size_t N>
constexpr std::string_view name_of(const NameTable<E, N>& table, E value,
                                   std::string_view fallback = {}) {
  if (const auto i = names_detail::index_of(value); i < N && table[i].first == value) {
    return table[i].second; // a table that passes names_cover
  }
  for (const auto& [e, name] : table) {
    if (e == value) {
      return name;
    }
  }
  return fallback;
}

// The enumerator named exactly `text` (case-sensitive); nullopt when no row has that name.
template <class E, std::size_t N>
constexpr std::optional<E> value_of(const NameTable<E, N>& table, std::string_view text) {
  for (const auto& [e, name] : table) {
    if (name == text) {
      return e;
    }
  }
  return std::nullopt;
}

} // namespace rocplay
