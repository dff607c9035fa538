#include "minitorch/events.h"

#include <chrono>
#include <stdexcept>

namespace minitorch::events {

namespace detail {
// The trace recorder's hook: with the process group and the allocator, the only process-wide
// mutable state (docs/design.md: a rank is a process, so "per rank" is "per process").
std::atomic<Sink*> g_sink{nullptr};
}  // namespace detail

namespace {
const std::chrono::steady_clock::time_point kStart = std::chrono::steady_clock::now();
std::atomic<std::uint64_t> g_next_id{1};
}  // namespace

const char* category_name(Category c) {
  switch (c) {
    case Category::compute: return "compute";
    case Category::comm: return "comm";
    case Category::memory: return "memory";
    case Category::phase: return "phase";
    case Category::transfer: return "transfer";
  }
  return "?";
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::begin: return "begin";
    case Kind::end: return "end";
    case Kind::instant: return "instant";
    case Kind::alloc: return "alloc";
    case Kind::free: return "free";
  }
  return "?";
}

std::uint64_t next_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }

namespace {
thread_local const FlatRange* t_flat_range = nullptr;
}
FlatRange::FlatRange(std::string_view scope, std::int64_t begin, std::int64_t end)
    : scope_(scope), begin_(begin), end_(end), previous_(t_flat_range) {
  t_flat_range = this;
}
FlatRange::~FlatRange() { t_flat_range = previous_; }
void FlatRange::annotate(Event& e) {
  if (!t_flat_range) return;
  e.scope = std::string(t_flat_range->scope_);
  e.range_begin = t_flat_range->begin_;
  e.range_end = t_flat_range->end_;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - kStart).count();
}

void emit(Event e) {
  Sink* sink = detail::g_sink.load(std::memory_order_acquire);
  if (!sink) return;
  e.time_us = now_us();
  sink->on_event(e);
}

Attach::Attach(Sink& sink) {
  Sink* expected = nullptr;
  if (!detail::g_sink.compare_exchange_strong(expected, &sink))
    throw std::logic_error("events::Attach: a sink is already attached on this rank (detach it first)");
}
Attach::~Attach() { detail::g_sink.store(nullptr, std::memory_order_release); }

Span::Span(Category category, const char* name, std::string_view scope, std::int64_t micro_step) {
  if (!enabled()) return;
  Event b;
  b.category = category;
  b.kind = Kind::begin;
  b.name = name;
  b.scope = std::string(scope);
  b.micro_step = micro_step;
  b.id = next_id();
  end_ = b;
  end_->kind = Kind::end;
  emit(std::move(b));
}

Span::~Span() {
  if (end_) emit(std::move(*end_));
}

void Recorder::on_event(const Event& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(e);
}
std::vector<Event> Recorder::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}
void Recorder::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
}

}  // namespace minitorch::events
