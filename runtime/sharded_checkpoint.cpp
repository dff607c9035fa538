#include "runtime/sharded_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "minitorch/json_limits.h"
#include "minitorch/safetensors.h"
#include "runtime/save_file_checks.h"
#include "runtime/save_target.h"

namespace minitorch::runtime {

namespace fs = std::filesystem;

namespace {
/// "<param>[a:b]" -> (param, a, b); a name without a range is the whole parameter (b = -1).
struct PieceName {
  std::string param;
  std::int64_t begin = 0, end = -1;
};
std::optional<PieceName> parse_piece(const std::string& name) {
  if (name.empty() || name.back() != ']') return PieceName{name, 0, -1};
  const auto open = name.rfind('['), colon = name.rfind(':');
  if (open == std::string::npos || colon == std::string::npos || colon < open) return std::nullopt;
  try {
    std::size_t used_a = 0, used_b = 0;
    const std::string a = name.substr(open + 1, colon - open - 1), b = name.substr(colon + 1, name.size() - colon - 2);
    PieceName p{name.substr(0, open), std::stoll(a, &used_a), std::stoll(b, &used_b)};
    if (used_a != a.size() || used_b != b.size() || a.empty() || b.empty() || a[0] == '-' || b[0] == '-' || p.end <= p.begin)
      return std::nullopt;
    return p;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// Pieces of one tensor kind ("param", "exp_avg", ...) of every parameter, put back together.
class Assembler {
 public:
  Assembler(const ShardedManifest& m, const std::string& dir) : dir_(dir) {
    for (const auto& [name, shape] : m.params) shapes_[name] = shape;
  }
  /// `key`: "<kind>.<param>[a:b]" from shard file `file`.
  void add(const std::string& key, const Tensor& t, const std::string& file) {
    const auto dot = key.find('.');
    const std::string kind = dot == std::string::npos ? "" : key.substr(0, dot);
    std::optional<PieceName> p = dot == std::string::npos ? std::nullopt : parse_piece(key.substr(dot + 1));
    if (kind != "param" && kind != "exp_avg" && kind != "exp_avg_sq" && kind != "master") p.reset();
    if (!p || !shapes_.count(p->param))
      resume_fail(dir_, "shard '" + file + "' holds '" + truncate_for_message(key) +
                            "', which is not a piece of a parameter the manifest names; use the files of one save together");
    const std::int64_t numel = numel_of(p->param);
    if (p->end < 0) p->end = numel;
    if (p->end > numel || t.numel() != p->end - p->begin || t.dtype() == DType::i32 ||
        (kind != "param" && t.dtype() != DType::f32))
      resume_fail(dir_, "shard '" + file + "' holds '" + truncate_for_message(key) + "' as " + dtype_name(t.dtype()) + " " +
                            shape_str(t.shape()) + ", which does not fit the parameter's " + std::to_string(numel) +
                            " elements; the shard is from another save");
    Whole& w = wholes_[kind + "." + p->param];
    if (!w.flat.defined()) w.flat = Tensor::empty({numel}, t.dtype());
    if (w.flat.dtype() != t.dtype())
      resume_fail(dir_, "shards disagree on the dtype of '" + kind + "." + p->param + "'; use the files of one save together");
    w.flat.narrow(0, p->begin, p->end - p->begin).copy_(t.reshape({t.numel()}));
    w.ranges.emplace_back(p->begin, p->end);
  }
  /// kind.<param> for every parameter, shaped; each element covered exactly once.
  nn::NamedTensors take(const std::string& kind, const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& params) {
    nn::NamedTensors out;
    for (const auto& [name, shape] : params) {
      auto it = wholes_.find(kind + "." + name);
      if (it == wholes_.end())
        resume_fail(dir_, "no shard holds any of " + kind + "." + name + "; a shard is missing or from another save");
      auto& ranges = it->second.ranges;
      std::sort(ranges.begin(), ranges.end());
      std::int64_t covered = 0;
      for (const auto& [a, b] : ranges) {
        if (a != covered)
          resume_fail(dir_, kind + "." + name + " elements [" + std::to_string(std::min(a, covered)) + ", " +
                                std::to_string(std::max(a, covered)) + ") are " + (a > covered ? "in no shard" : "in two shards") +
                                "; a shard is missing or from another save");
        covered = b;
      }
      if (covered != numel_of(name))
        resume_fail(dir_, kind + "." + name + " elements [" + std::to_string(covered) + ", " + std::to_string(numel_of(name)) +
                              ") are in no shard; a shard is missing or from another save");
      out.emplace_back(name, it->second.flat.reshape(Shape(shape.begin(), shape.end())));
    }
    return out;
  }
  bool has(const std::string& kind) const {
    return std::any_of(wholes_.begin(), wholes_.end(), [&](const auto& w) { return w.first.rfind(kind + ".", 0) == 0; });
  }

 private:
  struct Whole {
    Tensor flat;
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  };
  std::int64_t numel_of(const std::string& name) const {
    std::int64_t n = 1;
    for (auto d : shapes_.at(name)) n *= d;
    return n;
  }
  std::string dir_;
  std::map<std::string, std::vector<std::int64_t>> shapes_;
  std::map<std::string, Whole> wholes_;
};

}  // namespace

bool is_sharded_checkpoint(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

nn::NamedTensors shard_tensors(const zero::GradientStrategy& s, const nn::NamedTensors& whole) {
  nn::NamedTensors mine;
  if (s.shards_optimizer_state()) {
    for (const auto& [name, t] : s.parameter_pieces()) mine.emplace_back("param." + name, t);
  } else {
    for (const auto& [name, t] : whole) mine.emplace_back("param." + name, t);
  }
  if (s.optimizer_steps() > 0)
    for (const auto& [name, t] : s.optimizer_state()) mine.emplace_back(name, t);  // exp_avg.<piece>, ...
  return mine;
}

void save_sharded_checkpoint(const std::string& dir, const Engine& engine, const data::Tokenizer& tokenizer,
                             const std::string& run_id, const std::function<void(int)>& before_step) {
  save_shards(dir, engine, tokenizer, run_id, *engine.group(), shard_tensors(engine.strategy()), /*pipeline_stages=*/1,
              before_step);
}

void save_shards(const std::string& dir, const Engine& engine, const data::Tokenizer& tokenizer, const std::string& run_id,
                 dist::ProcessGroup& group, const nn::NamedTensors& mine, int pipeline_stages,
                 const std::function<void(int)>& before_step) {
  if (engine.tensor_group()) throw ConfigError(tensor_parallel_save_problem(engine.config()));
  const int rank = group.rank(), world = group.size();
  if (world != engine.dp_size() * pipeline_stages)
    throw std::logic_error("save_shards: " + std::to_string(world) + " ranks write, but the grid is " +
                           std::to_string(engine.dp_size()) + " data-parallel x " + std::to_string(pipeline_stages) +
                           " pipeline stages");
  // Every rank looks (the same answer on a shared file system), so a refusal needs no collective; all have
  // looked before rank 0 clears what a killed save left, which would change the answer under a slow rank.
  if (std::string problem = save_target_problem(dir, SaveKind::sharded); !problem.empty())
    throw std::runtime_error(problem);
  group.barrier();
  if (rank == 0)  // an empty DIR.partial/ (runtime/save_target.h)
    begin_save(dir, SaveKind::sharded, [](const std::string& p) { return is_complete(check_complete_sharded, p); });
  group.barrier();
  const std::string partial = partial_path(dir);

  // What the manifest will say, known on every rank: each shard carries it (manifest_facts).
  const zero::GradientStrategy& s = engine.strategy();
  ShardedManifest m(saved_run(engine, run_id));
  m.zero_stage = s.zero_stage();
  m.pipeline_stages = pipeline_stages;
  m.optimizer_steps = s.optimizer_steps();
  for (const auto& [name, t] : engine.model().named_parameters()) {  // the whole model's, every stage's
    m.params.emplace_back(name, std::vector<std::int64_t>(t.shape().begin(), t.shape().end()));
    m.numel += t.numel();
    m.dtype = dtype_name(t.dtype());
  }

  // ---- each rank: what it owns, nobody gathers ----
  auto meta = checkpoint_metadata(engine.model(), tokenizer, engine.global_steps());
  meta["run_id"] = run_id;
  meta["rank"] = std::to_string(rank);
  meta["world"] = std::to_string(world);
  meta["engine_state"] = engine_state_json(engine);
  meta["manifest_facts"] = manifest_facts(m);
  save_safetensors(partial + "/" + shard_file_name(rank, world), mine, meta);
  group.barrier();

  // ---- rank 0: the manifest (last), then the switch ----
  if (rank == 0) {
    for (int r = 0; r < world; ++r) m.shards.push_back(describe_file(partial + "/" + shard_file_name(r, world)));
    write_sharded_manifest(partial, m);
    switch_into_place(dir, SaveKind::sharded, before_step);
  }
  group.barrier();  // every rank returns once the save is in place
}

ShardedManifest check_complete_sharded(const std::string& dir) {
  ShardedManifest m = read_sharded_manifest(dir);
  for (const ManifestFile& f : m.shards) check_file_size(dir, dir + "/" + f.name, f, "shard", " (copy the whole directory)");
  return m;
}

FullState read_sharded_checkpoint(const std::string& dir) {
  const ShardedManifest m = check_complete_sharded(dir);
  Assembler pieces(m, dir);
  FullState st;
  for (int r = 0; r < m.ranks(); ++r) {
    const ManifestFile& want = m.shards[static_cast<std::size_t>(r)];
    const std::string file = dir + "/" + want.name;
    SafetensorsFile f = load_safetensors(file);
    auto meta = [&](const char* key) {
      auto it = f.metadata.find(key);
      return it == f.metadata.end() ? std::string("(none)") : it->second;
    };
    if (meta("run_id") != m.run_id)
      resume_fail(dir, "its shard '" + file + "' is from another run (" + truncate_for_message(meta("run_id")) +
                           ", the manifest says " + truncate_for_message(m.run_id) + "); use the files of one save together");
    if (meta("rank") != std::to_string(r) || meta("world") != std::to_string(m.ranks()))
      resume_fail(dir, "its shard '" + file + "' was written by rank " + truncate_for_message(meta("rank")) + " of " +
                           truncate_for_message(meta("world")) + "; use the files of one save together");
    check_file_checksum(dir, file, want, "shard");
    CheckpointInfo info = checkpoint_info_of(f);
    if (info.step != m.step)
      resume_fail(dir, "its shard '" + file + "' is from step " + std::to_string(info.step) + " but the manifest is from step " +
                           std::to_string(m.step) + "; use the files of one save together");
    check_file_facts(dir, f, m, "shard");
    if (r == 0) {
      st.info = info;
      st.engine_state = meta("engine_state") == "(none)" ? "" : meta("engine_state");
    }
    for (const auto& [key, t] : f.tensors) pieces.add(key, t, file);
  }
  st.info.path = dir;
  st.params = pieces.take("param", m.params);
  if (m.optimizer_steps > 0) {
    for (const char* kind : {"exp_avg", "exp_avg_sq"})
      for (auto& [name, t] : pieces.take(kind, m.params)) st.optim.emplace_back(std::string(kind) + "." + name, t);
    if (pieces.has("master"))
      for (auto& [name, t] : pieces.take("master", m.params)) st.optim.emplace_back("master." + name, t);
  }
  st.optimizer_steps = m.optimizer_steps;
  st.run = m;
  return st;
}

// ---- into an engine: cut for its ranks ----

namespace {
/// kind.<param> of `state`, flattened.
const Tensor* find_state(const FullState& st, const std::string& key) {
  for (const auto& [name, t] : st.optim)
    if (name == key) return &t;
  return nullptr;
}
const Tensor* find_param(const FullState& st, const std::string& name) {
  for (const auto& [n, t] : st.params)
    if (n == name) return &t;
  return nullptr;
}
}  // namespace

void load_full_state(Engine& engine, const FullState& st) {
  zero::GradientStrategy& s = engine.strategy();
  // Parameters: the f32 masters are the exact values of a bf16 run; a bf16 run takes its own bf16 copy.
  nn::NamedTensors whole;
  const DType p_dtype = engine.model().named_parameters().front().second.dtype();
  for (const auto& [name, t] : st.params) {
    const Tensor* master = find_state(st, "master." + name);
    whole.emplace_back(name, master && p_dtype == DType::f32 ? *master : t);
  }
  {
    TagScope scope(MemTag::param);
    s.load_parameters(whole);
  }
  engine.set_global_steps(st.info.step);
  restore_engine_state(engine, st.engine_state, st.info.path);
  if (st.optimizer_steps == 0) return;

  // Optimizer state: each of this optimizer's parameters ("p" or a piece "p[a:b]") cut out of the whole.
  nn::NamedTensors state;
  for (const auto& group : s.optimizer().param_groups())
    for (const auto& [name, p] : group.params) {
      const PieceName piece = parse_piece(name).value();
      for (const char* kind : {"exp_avg", "exp_avg_sq", "master"}) {
        const std::string key = std::string(kind) + "." + piece.param;
        const Tensor* src = find_state(st, key);
        if (std::string(kind) == "master") {
          // An f32 run's parameters are their own masters. Not p's dtype: with offload p is the host's f32
          // master of a 16-bit parameter, whose saved value must come back (issue 41).
          if (p_dtype == DType::f32) continue;
          if (!src) src = find_param(st, piece.param);  // an f32 save's parameters are the masters
        }
        if (!src) throw std::runtime_error("cannot resume from '" + st.info.path + "': it has no " + key);
        // Only this piece is converted (a bf16 save's parameters, taken as masters): not the whole tensor per piece.
        const Tensor slice = src->reshape({src->numel()}).narrow(0, piece.begin, p.numel());
        state.emplace_back(std::string(kind) + "." + name, slice.to(DType::f32).reshape(p.shape()));
      }
    }
  TagScope scope(MemTag::optim);
  s.load_optimizer_state(state, st.optimizer_steps);
}

std::int64_t consolidate(const std::string& dir, const std::string& out) {
  FullState st = read_sharded_checkpoint(dir);
  Generator gen(0);  // every weight is overwritten
  nn::GPT model(st.info.model, gen);
  nn::NamedTensors f32;
  for (const auto& [name, t] : st.params) {
    const Tensor* master = find_state(st, "master." + name);
    f32.emplace_back(name, master ? *master : t.to(DType::f32));
  }
  model.load_state_dict(f32, /*strict=*/true);
  save_model(out, model, *st.info.tokenizer, st.info.step);
  return model.num_parameters();
}

}  // namespace minitorch::runtime
