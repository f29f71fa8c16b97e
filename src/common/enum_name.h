// A table of an enumeration's names, and the two lookups over it: the one shape every name table
// of the project has (the CRD's enumerations in src/api, the routing vocabulary in
// common/routing_terms.h), so each enumeration keeps its names in exactly one place.
//
//   inline constexpr std::array<EnumName<Color>, 2> kColorNames{{{Color::kRed, "Red"},
//                                                                 {Color::kBlue, "Blue"}}};
//   EnumToString(Color::kRed, kColorNames)   // "Red"
//   EnumNamed("Blue", kColorNames)           // Color::kBlue; nullopt for any other name
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace eoc {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `value` in `names` ("" when it is not there).
template <class E, std::size_t N>
constexpr std::string_view EnumToString(E value, const std::array<EnumName<E>, N>& names) {
  for (const EnumName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return "";
}

// The value named `name` exactly (case matters), nullopt for any other name.
template <class E, std::size_t N>
constexpr std::optional<E> EnumNamed(std::string_view name,
                                     const std::array<EnumName<E>, N>& names) {
  for (const EnumName<E>& n : names) {
    if (n.name == name) return n.value;
  }
  return std::nullopt;
}

}  // namespace eoc
