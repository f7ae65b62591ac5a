// Scanning kernel and function names, shared by the demangler, the rule lookups
// and the classifier: bounded, and tolerant of unbalanced brackets (names come
// from untrusted text). Internal to src/kernels.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::kernels {

// Longer names are cut before any processing; real kernel names (deep ATen
// templates) stay well under this, and libstdc++'s demangler recurses on its
// input (kMaxDemangleBytes and kMaxDemangleNesting in the header bound what it
// sees).
inline constexpr std::size_t kMaxNameBytes = 64 * 1024;

std::string lower(std::string_view s);

bool contains(std::string_view haystack, std::string_view needle);

bool is_ident_char(char c);

std::string_view trim(std::string_view s);

// Kernel-descriptor symbols carry `.kd`; the demangler renders that as ` [clone
// .kd]`.
std::string_view strip_descriptor_suffix(std::string_view s);

// Splits a demangled C++ function name into its qualified name components, each
// without its template arguments. `template_args` receives the arguments of the
// last component.
struct NameParts {
  std::vector<std::string> components; // `at`, `native`, `index_elementwise_kernel`
  std::string template_args;           // of the last component, without the outer <>
};

NameParts split_name(std::string_view s);

// When the demangler refuses a name (e.g. `DF16b` in older libstdc++), the
// source names are still in the mangled text as <length><identifier>; that is
// enough to classify.
std::vector<std::string> mangled_identifiers(std::string_view s);

bool is_plain_identifier(std::string_view s);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

} // namespace rocplay::kernels
