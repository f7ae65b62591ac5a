// `--help` that fits the terminal: option and subcommand descriptions, the description and the
// footer are word-wrapped to its width (the report tables' widths are the report writers'
// business).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace rocplay::cli {

// The width help is wrapped to: the terminal's (stdout), else $COLUMNS, else 80; at most 100, so
// lines stay readable on a wide terminal, and at least 40.
std::size_t help_width();

// Word-wraps `text` to `width` columns, keeping its own line breaks; continuation lines get
// `indent` spaces. A word longer than the width stands alone on its line.
std::string wrap_text(std::string_view text, std::size_t width, std::size_t indent = 0);

class WrappingFormatter : public CLI::Formatter {
public:
  explicit WrappingFormatter(std::size_t width);
  std::string make_option_desc(const CLI::Option* opt) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;
  // A flag that also takes a value (`--color{always}`, checked against a set) reads
  // `--color[=WHEN]` with its choices after it, not CLI11's `--color{always} :{auto,...}`.
  std::string make_option_name(const CLI::Option* opt, bool positional) const override;
  std::string make_option_opts(const CLI::Option* opt) const override;

private:
  std::size_t width_;
};

} // namespace rocplay::cli
