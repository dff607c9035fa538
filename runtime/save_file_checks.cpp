#include "runtime/save_file_checks.h"

#include <filesystem>
#include <stdexcept>

namespace minitorch::runtime {

void resume_fail(const std::string& save, const std::string& what) {
  throw std::runtime_error("cannot resume from '" + save + "': " + what);
}

void check_file_size(const std::string& save, const std::string& file, const ManifestFile& want, const std::string& role,
                     const std::string& missing_hint) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(file, ec);
  if (ec) resume_fail(save, "its " + role + " '" + file + "' is missing; the save is incomplete" + missing_hint);
  if (bytes != want.bytes)
    resume_fail(save, "its " + role + " '" + file + "' is " + std::to_string(bytes) + " bytes but the save wrote " +
                          std::to_string(want.bytes) + ": it is truncated or was replaced; copy the whole save again");
}

void check_file_checksum(const std::string& save, const std::string& file, const ManifestFile& want,
                         const std::string& role) {
  if (fnv1a64_file(file) != want.fnv1a64)
    resume_fail(save, "its " + role + " '" + file + "' does not match the manifest's checksum: it was changed or "
                      "corrupted after the save");
}

namespace {
template <class Manifest>
void check_facts(const std::string& save, const SafetensorsFile& f, const Manifest& manifest, const std::string& role) {
  auto it = f.metadata.find("manifest_facts");
  if (it == f.metadata.end()) return;
  if (std::string why = facts_mismatch(manifest, it->second); !why.empty())
    resume_fail(save, why + " (" + role + " '" + f.path + "'): the manifest was edited or is from another save; use "
                      "the files of one save together");
}
}  // namespace

void check_file_facts(const std::string& save, const SafetensorsFile& f, const CheckpointManifest& manifest,
                      const std::string& role) {
  check_facts(save, f, manifest, role);
}
void check_file_facts(const std::string& save, const SafetensorsFile& f, const ShardedManifest& manifest,
                      const std::string& role) {
  check_facts(save, f, manifest, role);
}

}  // namespace minitorch::runtime
