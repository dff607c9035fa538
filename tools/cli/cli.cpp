// The one translation unit that compiles CLI11 (tools/cli/cli.h says why).
#include "tools/cli/cli.h"

#include <cmath>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

namespace minitorch::cli {

Check::Check(std::function<std::string(const std::string&)> test, std::string description)
    : validator_(std::make_shared<const CLI::Validator>(
          [test = std::move(test)](std::string& text) { return test(text); }, std::move(description))) {}
Check::~Check() = default;
Check::Check(const Check&) = default;
Check& Check::operator=(const Check&) = default;
std::string Check::operator()(const std::string& text) const {
  std::string copy = text;
  return (*validator_)(copy);
}

namespace {
Check wrap(const CLI::Validator& v) {
  return Check([v](const std::string& s) { std::string copy = s; return v(copy); }, v.get_description());
}
/// "" if `text` is one finite number (all of it), else why not. CLI11 2.1's PositiveNumber,
/// NonNegativeNumber and Range pass "nan": every comparison with NaN is false.
std::string finite_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return "'" + text + "' is not a number";
  if (!std::isfinite(v)) return "'" + text + "' is not a finite number";
  return "";
}
/// CLI11's check `v`, for finite numbers only.
Check wrap_finite(const CLI::Validator& v) {
  return Check(
      [v](const std::string& s) {
        if (std::string why = finite_number(s); !why.empty()) return why;
        std::string copy = s;
        return v(copy);
      },
      v.get_description());
}
}  // namespace

Check positive_number() { return wrap_finite(CLI::PositiveNumber); }
Check non_negative_number() { return wrap_finite(CLI::NonNegativeNumber); }
Check one_of(std::vector<std::string> choices) { return wrap(CLI::IsMember(std::move(choices))); }
Check range(double min, double max) { return wrap_finite(CLI::Range(min, max)); }

Option* Option::required() {
  opt_->required();
  return this;
}
Option* Option::type_name(const std::string& name) {
  opt_->type_name(name);
  return this;
}
Option* Option::check(const Check& check) {
  opt_->check(*check.validator_);
  return this;
}
Option* Option::show_default() {
  opt_->capture_default_str();
  return this;
}
bool Option::given() const { return opt_->count() > 0; }

Parser::Parser(const std::string& description) : app_(std::make_unique<CLI::App>(description)) {}
Parser::~Parser() = default;

Option* Parser::keep(CLI::Option* opt) {
  options_.push_back(std::unique_ptr<Option>(new Option(opt)));
  return options_.back().get();
}

Option* Parser::option(const std::string& n, std::string& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, int& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, long& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, long long& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, unsigned long& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, float& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, double& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, std::optional<std::string>& v, const std::string& h) {
  return keep(app_->add_option(n, v, h));
}
Option* Parser::option(const std::string& n, std::optional<int>& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, std::optional<long>& v, const std::string& h) { return keep(app_->add_option(n, v, h)); }
Option* Parser::option(const std::string& n, std::optional<double>& v, const std::string& h) {
  return keep(app_->add_option(n, v, h));
}
Option* Parser::flag(const std::string& n, bool& v, const std::string& h) { return keep(app_->add_flag(n, v, h)); }

void Parser::help_flag(const std::string& names, const std::string& help) { app_->set_help_flag(names, help); }
void Parser::allow_extras() { app_->allow_extras(); }
void Parser::prefix_command() { app_->prefix_command(); }
void Parser::program_name(const std::string& name) { app_->name(name); }

int Parser::parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app_->exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

Parser::Outcome Parser::parse_quietly(int argc, char** argv, std::string& error) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return Outcome::help;
  } catch (const CLI::ParseError& e) {
    error = e.what();
    return Outcome::usage_error;
  }
  return Outcome::run;
}

void Parser::print_help() const { std::cout << app_->help(); }

std::vector<std::string> Parser::remaining() const { return app_->remaining(); }
bool Parser::given(const std::string& name) const { return app_->count(name) > 0; }

}  // namespace minitorch::cli
