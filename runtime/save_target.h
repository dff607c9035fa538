#pragma once
/// \file save_target.h
/// Where a save lands, and what it may touch. Two promises, for every kind of save:
///
/// 1. A save never removes or overwrites anything a minitorch save did not write. Whatever is at
///    PATH, PATH.partial or PATH.old before a save must be a save's own — a checkpoint or model file
///    (its safetensors metadata says `format: minitorch-checkpoint-1`), a manifest (its `format`), a
///    directory holding only shards and a manifest — or nothing; anything else, `--out app` naming a
///    user's folder, is one clear error before a byte is written (save_target_problem).
/// 2. At every moment one complete save exists: the new save is written whole under PATH.partial
///    first, and only then switched into place (switch_into_place):
///
///      single file   PATH.partial, PATH.partial.optim, PATH.partial.manifest.json (the manifest last)
///                    are complete; the old PATH.manifest.json goes (PATH.partial is now the complete
///                    save); the new files are linked in as PATH.optim and PATH, the manifest last;
///                    then PATH.partial's names go.
///      directory     PATH.partial/ is complete (its manifest last); PATH -> PATH.old,
///                    PATH.partial -> PATH (two renames); PATH.old is removed.
///
///    So a kill, a full disk or an exceeded file-size limit at any moment leaves a complete save at
///    PATH, else at PATH.partial, else at PATH.old; locate_save() (runtime/save_and_resume.h) finds
///    it for `--resume PATH` and `minitorch-consolidate PATH`, and says which it used.
/// 3. The save locate_save() finds is never removed before a newer one is what it finds: the next save
///    of PATH, finding a complete PATH.partial beside an incomplete PATH (a switch cut short), first
///    finishes that switch (begin_save), and only then clears PATH.partial for itself. So two faults
///    in a row — a kill between the renames, a resume from PATH.partial, a kill in the next save —
///    still leave that resume's save, now at PATH.
///
/// \code
///   if (auto problem = runtime::save_target_problem("out/ckpt", runtime::SaveKind::sharded); !problem.empty())
///     throw std::runtime_error(problem);                     // minitorch-train, before step 1
///   runtime::begin_save(path, kind, complete);               // the savers: refuse, finish, clear leftovers
///   ... write PATH.partial (files, then the manifest) ...
///   runtime::switch_into_place(path, kind);
/// \endcode
#include <functional>
#include <stdexcept>
#include <string>

namespace minitorch::runtime {

/// A single-file save (PATH, PATH.optim, PATH.manifest.json) or a sharded one (the directory PATH).
enum class SaveKind { single_file, sharded };

/// `path + ".partial"`: where a save writes before it switches.
std::string partial_path(const std::string& path);
/// `path + ".old"`: where a sharded save keeps the previous save during the switch.
std::string old_path(const std::string& path);

/// Why a save of `kind` must not write at `path` (empty: it may), from promise 1 above: it names the
/// first thing at PATH, PATH.partial or PATH.old (or a file inside such a directory) that no minitorch
/// save wrote, or a file where a directory belongs and the other way round. Every message begins
/// "--out 'PATH'". minitorch-train asks before step 1; begin_save() asks again.
std::string save_target_problem(const std::string& path, SaveKind kind);

/// Before a save writes: throws std::runtime_error(save_target_problem(...)) if there is a problem;
/// finishes an interrupted switch (PATH.partial complete, PATH not: switch_into_place), so the save
/// --resume finds is never the one cleared; then removes what a killed save of `path` left (an
/// incomplete PATH.partial and its files, write_file_atomic's `*.tmp.<pid>` files of every name the save
/// uses); a sharded save gets an empty PATH.partial/. `complete(p)`: whether p holds one complete save
/// of this kind (check_complete_save, check_complete_sharded).
void begin_save(const std::string& path, SaveKind kind, const std::function<bool(const std::string&)>& complete);

/// Whether `check(p)` passes: check is check_complete_save or check_complete_sharded, which throw
/// std::runtime_error when `p` is not one complete save.
template <class Check>
bool is_complete(const Check& check, const std::string& p) {
  try {
    check(p);
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

/// The switch of promise 2, once PATH.partial holds the complete new save. `before_step(k)` runs
/// before each of its steps, k = 0, 1, ... (single file: 0 drop the old manifest, 1 .optim, 2 the
/// model, 3 the manifest, 4 drop PATH.partial's names; directory: 0 PATH -> PATH.old,
/// 1 PATH.partial -> PATH, 2 drop PATH.old): tests throw there to stand for a kill.
void switch_into_place(const std::string& path, SaveKind kind, const std::function<void(int)>& before_step = {});

}  // namespace minitorch::runtime
