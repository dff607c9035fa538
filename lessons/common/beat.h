#pragma once
// A lesson is a sequence of beats: print what is about to happen, run it live, wait for Enter.
// `--auto` runs every beat without waiting (CI runs the lessons this way).
//
//   lesson::Beats beats(argc, argv, "Lesson 01: the tensor");
//   beats.beat("views share storage", "transpose swaps the strides; no byte moves.");
//   ... live code, printing real numbers ...
//   std::string data = beats.option("--data", "datasets/kjv.txt");   // "--data PATH" or the default
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace lesson {

class Beats {
 public:
  Beats(int argc, char** argv, std::string title) : args_(argv + 1, argv + argc) {
    for (const auto& a : args_)
      if (a == "--auto") auto_ = true;
    std::cout << "\n=== " << title << " ===\n" << (auto_ ? "(--auto: running every beat)\n" : "(Enter: next beat)\n");
  }
  /// Starts beat n: prints its heading and the idea in a sentence or two.
  void beat(const std::string& heading, const std::string& idea) {
    if (count_ > 0) wait();
    ++count_;
    std::cout << "\n--- beat " << count_ << ": " << heading << " ---\n" << idea << "\n\n";
  }
  bool is_auto() const { return auto_; }

  /// The value after `name` on the command line ("--steps 30"), or `fallback` if it is absent.
  std::string option(const std::string& name, const std::string& fallback) const {
    for (std::size_t i = 0; i + 1 < args_.size(); ++i)
      if (args_[i] == name) return args_[i + 1];
    return fallback;
  }
  /// Same for an integer option; a value that is not a positive integer exits with a message.
  long long int_option(const std::string& name, long long fallback) const {
    std::string v = option(name, "");
    if (v.empty()) return fallback;
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (*end != '\0' || n <= 0) {
      std::cerr << "error: " << name << " needs a positive integer, got '" << v << "'\n";
      std::exit(2);
    }
    return n;
  }

 private:
  void wait() {
    if (auto_) return;
    std::cout << "\n[Enter] " << std::flush;
    std::string line;
    std::getline(std::cin, line);
  }
  std::vector<std::string> args_;
  bool auto_ = false;
  int count_ = 0;
};

}  // namespace lesson
