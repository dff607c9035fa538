#include "minitorch/storage.h"

#include "minitorch/events.h"

namespace minitorch {

std::shared_ptr<Storage> Storage::allocate(std::size_t nbytes, Device device, MemTag tag) {
  const std::uint64_t block = events::enabled() ? events::next_id() : 0;  // a name only a listener needs
  account_alloc(device, tag, static_cast<std::int64_t>(nbytes), block);  // first: a pool over its capacity throws
  void* data = nullptr;
  try {
    data = device_allocator(device.type).allocate(nbytes, device.index);
  } catch (...) {
    account_free(device, tag, static_cast<std::int64_t>(nbytes), block);
    throw;
  }
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, tag, block));
}

std::shared_ptr<Storage> Storage::empty(Device device, MemTag tag) {
  return std::shared_ptr<Storage>(new Storage(nullptr, 0, device, tag, 0));
}

Storage::~Storage() {
  account_free(device_, tag_, static_cast<std::int64_t>(nbytes_), block_);
  if (data_) device_allocator(device_.type).deallocate(data_, nbytes_, device_.index);
}

void Storage::retag(MemTag tag) {
  if (tag == tag_) return;
  account_free(device_, tag_, static_cast<std::int64_t>(nbytes_), block_);
  account_alloc(device_, tag, static_cast<std::int64_t>(nbytes_), block_);
  tag_ = tag;
}

}  // namespace minitorch
