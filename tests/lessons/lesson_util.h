#pragma once
// What the lesson tests share: running a lesson as a student does (from the repository root; lesson 05
// under mpirun on 4 ranks), the figures its guide quotes, and the code names its guide mentions.
//
// A guide marks what a run prints with an HTML comment (invisible on GitHub) followed by an indented
// block of output lines:
//
//   <!-- printed by: --auto --quick -->
//
//       loss at init 4.1833, ln(V) = ln(63) = 4.1431
//       bucket 0:  198656 elements, 15 tensors: transformer.ln_f.bias ... transformer.h.2.mlp.c_proj.bias
//
// Each quoted line must appear in the output of the lesson run with those options (runs of spaces count
// as one; "..." stands for anything on the same line). A test runs the lesson once and checks them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace lesson_test {

using mt_test::CommandResult;

inline const std::string kSource = MT_SOURCE_DIR;
inline const std::string kBin = MT_BIN_DIR;
inline const std::string kData = kSource + "/datasets/kjv.txt";
/// 4 ranks on any machine (fewer cores: oversubscribe; as root: allowed); -q: no Open MPI banners.
inline const std::string kMpirun =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -q --oversubscribe --bind-to none -np 4 ";

/// The lesson folder of lesson `nn` ("03" -> "03_gpt").
inline std::string lesson_dir(const std::string& nn) {
  for (const auto& e : std::filesystem::directory_iterator(kSource + "/lessons"))
    if (e.path().filename().string().rfind(nn + "_", 0) == 0) return e.path().filename().string();
  return "(no lesson " + nn + ")";
}

/// The lessons that run on several ranks (the Makefile's MPI_LESSONS).
inline bool runs_on_ranks(const std::string& nn) {
  return nn == "05" || nn == "06" || nn == "07" || nn == "09" || nn == "10" || nn == "11" || nn == "12" || nn == "13";
}

/// The command line of lesson `nn` with `args`: build/bin/lesson-NN, under mpirun for the lessons on
/// several ranks.
inline std::string lesson_command(const std::string& nn, const std::string& args) {
  return (runs_on_ranks(nn) ? kMpirun : std::string()) + kBin + "/lesson-" + nn + " " + args;
}

/// Runs lesson `nn` from the repository root with `args`, standard input empty.
inline CommandResult run_lesson(const std::string& nn, const std::string& args) {
  return mt_test::run_command("cd " + kSource + " && " + lesson_command(nn, args));
}

/// Same, with `typed` (a printf format: "\\nq\\n" is Enter, then q and Enter) on standard input.
inline CommandResult run_lesson_typing(const std::string& nn, const std::string& args, const std::string& typed) {
  return mt_test::run_command("cd " + kSource + " && (printf '" + typed + "' | " + lesson_command(nn, args) + ")");
}

using mt_test::read_text;

/// `s` with each run of blanks as one space and no blanks at either end.
inline std::string squeeze(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool blank = c == ' ' || c == '\t';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// The output lines the guide of lesson `nn` quotes for a run with `args` (see the top of this file).
inline std::vector<std::string> guide_figures(const std::string& nn, const std::string& args) {
  const std::vector<std::string> lines = lines_of(read_text(kSource + "/lessons/" + lesson_dir(nn) + "/README.md"));
  const std::string marker = "<!-- printed by: " + args + " -->";
  std::vector<std::string> figures;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (squeeze(lines[i]) != marker) continue;
    for (std::size_t j = i + 1; j < lines.size(); ++j) {
      if (lines[j].empty()) continue;
      if (lines[j].rfind("    ", 0) != 0) break;
      figures.push_back(squeeze(lines[j]));
    }
  }
  return figures;
}

/// True if `line` holds the parts of `figure` between its "..." in that order.
inline bool matches(const std::string& figure, const std::string& line);

/// True if one line of `output` holds the parts of `figure` between its "..." in that order.
inline bool printed(const std::string& figure, const std::vector<std::string>& output) {
  for (const std::string& line : output)
    if (matches(figure, line)) return true;
  return false;
}

inline bool matches(const std::string& figure, const std::string& line) {
  std::vector<std::string> parts;
  for (std::size_t from = 0;;) {
    const std::size_t dots = figure.find("...", from);
    parts.push_back(squeeze(figure.substr(from, dots == std::string::npos ? std::string::npos : dots - from)));
    if (dots == std::string::npos) break;
    from = dots + 3;
  }
  const std::string l = squeeze(line);
  std::size_t at = 0;
  for (const std::string& p : parts) {
    const std::size_t found = l.find(p, at);
    if (found == std::string::npos) return false;
    at = found + p.size();
  }
  return true;
}

/// The blocks the guide of lesson `nn` quotes for `args`, each its lines in order.
inline std::vector<std::vector<std::string>> guide_blocks(const std::string& nn, const std::string& args) {
  const std::vector<std::string> lines = lines_of(read_text(kSource + "/lessons/" + lesson_dir(nn) + "/README.md"));
  std::vector<std::vector<std::string>> blocks;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (squeeze(lines[i]) != "<!-- printed by: " + args + " -->") continue;
    blocks.emplace_back();
    for (std::size_t j = i + 1; j < lines.size() && (lines[j].empty() || lines[j].rfind("    ", 0) == 0); ++j)
      if (!lines[j].empty()) blocks.back().push_back(squeeze(lines[j]));
  }
  return blocks;
}

/// True if `block` is printed as it is quoted: its lines one after the other in `output` (blank lines
/// apart), except where a line "..." marks lines left out.
inline bool printed_in_order(const std::vector<std::string>& block, const std::vector<std::string>& output) {
  std::vector<std::string> out;
  for (const std::string& line : output)
    if (!squeeze(line).empty()) out.push_back(line);
  for (std::size_t start = 0; start < out.size(); ++start) {
    std::size_t at = start;
    bool gap = true, all = true;  // the first line may be anywhere
    for (const std::string& figure : block) {
      if (figure == "...") {
        gap = true;
        continue;
      }
      while (gap && at < out.size() && !matches(figure, out[at])) ++at;
      if (at >= out.size() || !matches(figure, out[at])) {
        all = false;
        break;
      }
      ++at, gap = false;
    }
    if (all) return true;
  }
  return false;
}

/// Checks that the guide of lesson `nn` quotes at least one line for `args` and that every quoted line
/// is in `output` (the output of that run).
inline void expect_guide_figures(const std::string& nn, const std::string& args, const std::string& output) {
  const std::vector<std::string> figures = guide_figures(nn, args);
  EXPECT_FALSE(figures.empty()) << "lessons/" << lesson_dir(nn) << "/README.md has no <!-- printed by: " << args
                                << " --> block";
  const std::vector<std::string> out = lines_of(output);
  for (const std::string& f : figures)
    EXPECT_TRUE(printed(f, out)) << "the guide of lesson " << nn << " quotes\n    " << f << "\nbut `lesson-" << nn << " "
                                 << args << "` did not print it:\n" << output;
}

/// The same, and every quoted block as printed: its lines consecutive, a line "..." where some are left out.
inline void expect_guide_blocks(const std::string& nn, const std::string& args, const std::string& output) {
  expect_guide_figures(nn, args, output);
  const std::vector<std::string> out = lines_of(output);
  for (const std::vector<std::string>& block : guide_blocks(nn, args)) {
    std::string text;
    for (const std::string& line : block) text += "    " + line + "\n";
    EXPECT_TRUE(printed_in_order(block, out)) << "the guide of lesson " << nn << " quotes, as one block,\n" << text
                                              << "but `lesson-" << nn << " " << args << "` printed those lines apart "
                                              << "(mark what is left out with a line \"...\"):\n" << output;
  }
}

// ---- frames a lesson prints (lessons/common/frames.h, drawn by trace/terminal_player.h) ----

/// One frame as the terminal player printed it (plain characters: --auto prints no colours).
struct PrintedFrame {
  std::string header;   // "=== frame 4/5 | step 3 | micro 0 | reduce ===..."
  std::string phase;    // "reduce"
  std::string label;    // "all-reduce the gradients"
  std::vector<std::string> notes;             // the caption and the collective, trimmed
  std::vector<std::string> owners;            // per bucket: the owner of each cell ("0000111122223333")
  std::vector<std::vector<std::string>> bars;  // per rank: params, grads, optim, each "|...|...|" per bucket
  std::string text;                           // the frame's lines as printed
  int ranks() const { return static_cast<int>(bars.size()); }
  /// Rank r's bar of `kind` ("params", "grads", "optim") in bucket b, one character per cell.
  std::string cells(int r, const std::string& kind, std::size_t b) const {
    const std::size_t k = kind == "params" ? 0 : kind == "grads" ? 1 : 2;
    std::vector<std::string> segs;
    std::istringstream in(bars.at(static_cast<std::size_t>(r)).at(k));
    for (std::string seg; std::getline(in, seg, '|');)
      if (!seg.empty()) segs.push_back(seg);
    return segs.at(b);
  }
  bool note(const std::string& text) const {
    for (const std::string& n : notes)
      if (n.find(text) != std::string::npos) return true;
    return false;
  }
};

/// The text between the first and the last '|' of a line.
inline std::string between_bars(const std::string& line) {
  const std::size_t a = line.find('|'), z = line.rfind('|');
  return a == std::string::npos || z <= a ? "" : line.substr(a, z - a + 1);
}

/// Every frame in `output`, in order: a "=== frame k/n | step s | micro m | phase ===" line, the label,
/// the caption and collective, the owner row, then per rank its params, grads and optim bars.
inline std::vector<PrintedFrame> printed_frames(const std::string& output) {
  const std::vector<std::string> lines = lines_of(output);
  std::vector<PrintedFrame> frames;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("=== frame ", 0) != 0 || i + 1 >= lines.size()) continue;
    PrintedFrame f;
    f.header = lines[i];
    const std::size_t bar = f.header.rfind(" | ");
    f.phase = bar == std::string::npos ? "" : f.header.substr(bar + 3, f.header.find(' ', bar + 3) - bar - 3);
    f.label = lines[i + 1];
    std::size_t j = i + 2;
    for (; j < lines.size() && lines[j].rfind("  ", 0) == 0 && !squeeze(lines[j]).empty(); ++j)
      f.notes.push_back(squeeze(lines[j]));
    for (; j < lines.size() && lines[j].empty(); ++j) {
    }
    for (; j < lines.size() && !lines[j].empty(); ++j) {
      const std::string& l = lines[j];
      if (l.rfind("owner", 0) == 0) {
        std::istringstream in(between_bars(l));
        for (std::string seg; std::getline(in, seg, '|');)
          if (!seg.empty()) f.owners.push_back(seg);
      } else if (l.rfind("rank ", 0) == 0 && l.find(" params ") != std::string::npos) {
        f.bars.push_back({between_bars(l)});
      } else if (!f.bars.empty() && (l.find(" grads ") != std::string::npos || l.find(" optim ") != std::string::npos) &&
                 l.find('|') != std::string::npos) {
        f.bars.back().push_back(between_bars(l));
      }
    }
    for (std::size_t k = i; k < j; ++k) f.text += lines[k] + "\n";
    frames.push_back(std::move(f));
    i = j;
  }
  return frames;
}

/// The `nth` (0-based) printed frame labelled `label`, or nullptr.
inline const PrintedFrame* find_frame(const std::vector<PrintedFrame>& frames, const std::string& label, int nth = 0) {
  for (const PrintedFrame& f : frames)
    if (f.label == label && nth-- == 0) return &f;
  return nullptr;
}

/// Checks that in bucket b every rank's `kind` shows `own` on the cells of its own shard and `other`
/// on the rest (the owner row says whose shard a cell is in).
inline void expect_cells(const PrintedFrame& f, const std::string& kind, std::size_t b, char own, char other) {
  ASSERT_LT(b, f.owners.size()) << f.text;
  for (int r = 0; r < f.ranks(); ++r) {
    std::string expected;
    for (char owner : f.owners[b]) expected += owner - '0' == r ? own : other;
    EXPECT_EQ(f.cells(r, kind, b), expected) << "frame '" << f.label << "': rank " << r << " " << kind << " in bucket "
                                             << b << " (owners " << f.owners[b] << ")\n" << f.text;
  }
}

// ---- the code a guide names ----

/// What a guide may name: every source file of the tree (C++, CUDA, Makefile, CMake) concatenated, its
/// identifiers, and its GoogleTest suites and tests (those of tests/lessons too). Read once per process.
struct SourceIndex {
  std::string text;
  std::set<std::string> words;   // identifiers
  std::set<std::string> suites;  // L05_DDP
  std::set<std::string> tests;   // L05_DDP.Name
};

inline const SourceIndex& source_index() {
  static const SourceIndex index = [] {
    SourceIndex ix;
    std::string lesson_tests;  // tests/lessons: its test names count, its strings (names that must fail) do not
    ix.text = read_text(kSource + "/Makefile") + read_text(kSource + "/CMakeLists.txt");
    for (const char* dir : {"minitorch", "cuda", "autograd", "nn", "optim", "data", "dist", "tp", "zero", "gemini", "runtime", "pipeline", "trace", "tools", "lessons",
                            "bench", "tests"}) {
      if (!std::filesystem::exists(kSource + "/" + dir)) continue;
      for (const auto& e : std::filesystem::recursive_directory_iterator(kSource + "/" + dir)) {
        const std::string ext = e.path().extension().string();
        if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh")) continue;
        const bool ours = e.path().parent_path() == std::filesystem::path(kSource + "/tests/lessons");
        (ours ? lesson_tests : ix.text) += read_text(e.path().string()) + "\n";
      }
    }
    // One pass per text: every identifier, and the suite and name after each TEST( / TEST_F( / TEST_P(.
    auto scan = [&ix](const std::string& t, bool words) {
      auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
      for (std::size_t i = 0; i < t.size();) {
        if (!is_word(t[i])) {
          ++i;
          continue;
        }
        std::size_t j = i;
        while (j < t.size() && is_word(t[j])) ++j;
        const std::string word = t.substr(i, j - i);
        if (words) ix.words.insert(word);
        if ((word == "TEST" || word == "TEST_F" || word == "TEST_P") && j < t.size() && t[j] == '(') {
          const std::size_t comma = t.find(',', j), close = t.find(')', j);
          if (comma != std::string::npos && close != std::string::npos && comma < close) {
            const std::string suite = squeeze(t.substr(j + 1, comma - j - 1));
            ix.suites.insert(suite);
            ix.tests.insert(suite + "." + squeeze(t.substr(comma + 1, close - comma - 1)));
          }
        }
        i = j;
      }
    };
    scan(ix.text, true);
    scan(lesson_tests, false);
    return ix;
  }();
  return index;
}

/// Why `name` (one backticked piece of a guide) names nothing in the tree, or "" if it is fine.
/// Checked: paths of source files, build/bin programs, make targets, test suites and test names, and
/// code identifiers (`release_saved`, `Tensor::view`, `w.grad()`). Prose and commands pass as they are.
inline std::string stale(const std::string& name) {
  namespace fs = std::filesystem;
  const SourceIndex& code = source_index();
  std::smatch m;
  std::string problems;
  // make targets
  // The patterns are built once: std::regex's construction dominates this check under make sanitize.
  static const std::regex make_re(R"(make ([\w-]+).*)"), lesson_re(R"((?:test-)?lesson-(\d\d))"),
      test_re(R"(\b(L\d\d_(?:T\d+_?)?[A-Za-z0-9]*)(?:\.([A-Za-z0-9_]+))?)"),  // L05_T1_Ring.X, L05_T1
      path_re(R"((?:^|\s|')([A-Za-z_][\w.-]*/[\w./{},-]*[\w}]))"), lesson_prog_re(R"(lesson-(\d\d))"),
      test_prog_re(R"(test-(\w+))"), bench_prog_re(R"(bench-(\w+))"), braces_re(R"((.*)\{([^}]*)\}(.*))"),
      id_re(R"(([A-Za-z_]\w*(?:(?:::|\.)[A-Za-z_]\w*)*)(?:\(\))?)"), test_name_re(R"(L\d\d_\w+(\.\w+)?)");
  if (std::regex_match(name, m, make_re)) {
    const std::string target = m[1];
    std::smatch l;
    const bool lesson_rule = std::regex_match(target, l, lesson_re) &&
                             lesson_dir(l[1]).rfind("(no", 0) != 0 && code.text.find("lesson-%:") != std::string::npos;
    if (!lesson_rule && !std::regex_search(read_text(kSource + "/Makefile"), std::regex("(^|\\n|\\s)" + target + ":")))
      problems += "no make target '" + target + "'; ";
  }
  // test suites and tests: `ctest -R L03_Data` selects the suites that start so; L05_DDP.Name is one test
  for (auto it = std::sregex_iterator(name.begin(), name.end(), test_re); it != std::sregex_iterator(); ++it) {
    const std::string suite = (*it)[1], test = (*it)[2];
    const bool truncated = name.compare((*it).position() + (*it).length(), 3, "...") == 0;
    if (test.empty()) {
      auto next = code.suites.lower_bound(suite);
      if (next == code.suites.end() || next->rfind(suite, 0) != 0) problems += "no test suite " + suite + "...; ";
    } else if (!code.suites.count(suite)) {
      problems += "no test suite " + suite + "; ";
    } else if (!truncated && !code.tests.count(suite + "." + test)) {
      problems += "no test " + suite + "." + test + "; ";
    }
  }
  // paths: source files, and programs in build/bin
  for (auto it = std::sregex_iterator(name.begin(), name.end(), path_re); it != std::sregex_iterator(); ++it) {
    const std::string path = (*it)[1];
    if (path.rfind("datasets/", 0) == 0 || path.rfind("out/", 0) == 0) continue;  // made by runs, not in git
    if (path.rfind("build/bin/", 0) == 0) {
      const std::string prog = path.substr(10);
      std::smatch p;
      bool ok = fs::exists(kSource + "/tools/" + prog + ".cpp") ||
                (prog == "minitorch-grade" && fs::exists(kSource + "/tools/labs/minitorch_grade.py"));
      if (std::regex_match(prog, p, lesson_prog_re)) ok = lesson_dir(p[1]).rfind("(no", 0) != 0;
      if (std::regex_match(prog, p, test_prog_re)) ok = fs::is_directory(kSource + "/tests/" + p[1].str());
      if (std::regex_match(prog, p, bench_prog_re)) ok = fs::exists(kSource + "/bench/" + p[1].str() + ".cpp");
      if (!ok) problems += "no program " + path + "; ";
      continue;
    }
    if (path.rfind("build", 0) == 0) continue;
    std::vector<std::string> expanded{path};  // dist/ddp.{h,cpp}
    std::smatch b;
    if (std::regex_match(path, b, braces_re)) {
      expanded.clear();
      std::istringstream alts(b[2].str());
      for (std::string alt; std::getline(alts, alt, ',');) expanded.push_back(b[1].str() + alt + b[3].str());
    }
    for (const std::string& e : expanded)
      if (!fs::exists(kSource + "/" + e)) problems += "no file " + e + "; ";
  }
  // code identifiers: release_saved, Tensor::view, w.grad(), contiguous() (test names are checked above)
  if (std::regex_match(name, m, id_re) &&
      !std::regex_match(name, test_name_re)) {
    const std::string id = m[1];
    const std::size_t dot = id.rfind('.');
    bool ok;
    if (dot != std::string::npos)  // w.grad: as written, or through a pointer
      ok = code.text.find(id) != std::string::npos ||
           code.text.find(id.substr(0, dot) + "->" + id.substr(dot + 1)) != std::string::npos;
    else if (id.find("::") != std::string::npos)
      ok = code.text.find(id) != std::string::npos;
    else
      ok = code.words.count(id) > 0;
    if (!ok) problems += "no code named '" + id + "'; ";
  }
  return problems;
}

/// Every backticked name in the guide of lesson `nn` must exist (see stale()).
inline void expect_guide_names_exist(const std::string& nn) {
  const std::string guide = read_text(kSource + "/lessons/" + lesson_dir(nn) + "/README.md");
  ASSERT_FALSE(guide.empty());
  const std::regex tick("`([^`\\n]+)`");
  for (auto it = std::sregex_iterator(guide.begin(), guide.end(), tick); it != std::sregex_iterator(); ++it) {
    const std::string why = stale((*it)[1]);
    EXPECT_TRUE(why.empty()) << "lessons/" << lesson_dir(nn) << "/README.md names `" << (*it)[1] << "`: " << why;
  }
}

}  // namespace lesson_test
