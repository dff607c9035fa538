#pragma once
/// \file storage.h
/// A block of device memory owned by one or more tensors (views share it).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "minitorch/allocator.h"
#include "minitorch/device.h"

namespace minitorch {

class Storage {
 public:
  /// Allocates `nbytes` on `device`, accounted under `tag` (default: the thread's current tag).
  static std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device, MemTag tag = current_tag());
  /// No bytes on `device`: what a released tensor points to (Tensor::release_data()).
  static std::shared_ptr<Storage> empty(Device device, MemTag tag);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  MemTag tag() const { return tag_; }
  /// Moves the bytes from one tag to another (e.g. a buffer handed to the optimizer).
  void retag(MemTag tag);
  /// Names this block in the memory events (events::Event::id): it pairs the block's alloc with its free,
  /// as an address does in PyTorch's memory snapshot. Given only while a sink listens (0 otherwise).
  std::uint64_t block_id() const { return block_; }

 private:
  Storage(void* data, std::size_t nbytes, Device device, MemTag tag, std::uint64_t block)
      : data_(data), nbytes_(nbytes), device_(device), tag_(tag), block_(block) {}
  void* data_;
  std::size_t nbytes_;
  Device device_;
  MemTag tag_;
  std::uint64_t block_;
};

}  // namespace minitorch
