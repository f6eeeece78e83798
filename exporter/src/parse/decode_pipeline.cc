// DecodePipeline (see decode_pipeline.h).
#include "parse/decode_pipeline.h"

namespace profwatch::parse {
namespace {

// A batch's events outlive the decoder's next call: strings that the decoder
// unescaped into its own buffer are copied into the batch.
void KeepView(std::string_view& v, const char* lo, const char* hi, std::deque<std::string>& store) {
  if (v.empty() || (v.data() >= lo && v.data() < hi)) return;
  store.emplace_back(v);
  v = store.back();
}

}  // namespace

DecodePipeline::DecodePipeline(int helper_threads, bool dur_as_double,
                               std::shared_ptr<WorkShare> share, size_t max_in_flight,
                               bool decode_runs)
    : helper_threads_(std::max(0, helper_threads)),
      dur_as_double_(dur_as_double),
      decode_runs_(decode_runs),
      max_in_flight_(std::max<size_t>(1, max_in_flight)),
      own_decoder_(dur_as_double, decode_runs),
      lender_decoder_(dur_as_double, decode_runs),
      share_(std::move(share)) {
  if (share_) share_->Offer([this] { return DecodeOneForLender(); });
}

DecodePipeline::~DecodePipeline() {
  if (share_) share_->Offer({});  // waits for a chore in progress
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void DecodePipeline::DecodeBatch(EventDecoder& decoder, EventBatch& batch) {
  const char* lo = batch.bytes.data();
  const char* hi = lo + batch.bytes.size();
  TimeBase base = batch.base;  // known, so Decode leaves it alone
  // Slots are overwritten by Decode, so a recycled batch keeps its old ones
  // rather than value-initialising every event again.
  if (batch.events.size() < batch.entries.size()) batch.events.resize(batch.entries.size());
  batch.decoded = decoder.DecodeEntries(batch.bytes.data(), batch.bytes.size(),
                                        batch.entries.data(), batch.entries.size(), base,
                                        batch.counts, batch.events.data(), [&](TraceEvent& ev) {
                                          KeepView(ev.name, lo, hi, batch.unescaped);
                                          KeepView(ev.cat, lo, hi, batch.unescaped);
                                          KeepView(ev.args_name, lo, hi, batch.unescaped);
                                          KeepView(ev.pid.str, lo, hi, batch.unescaped);
                                          KeepView(ev.tid.str, lo, hi, batch.unescaped);
                                        });
}

void DecodePipeline::HelperLoop() {
  EventDecoder decoder(dur_as_double_, decode_runs_);
  std::unique_lock lock(mu_);
  for (;;) {
    Slot* slot = nullptr;
    work_cv_.wait(lock, [&] { return stop_ || (slot = FirstQueued()) != nullptr; });
    if (stop_) return;
    slot->state = State::kDecoding;
    lock.unlock();
    DecodeBatch(decoder, *slot->batch);  // slots_ only grows at the back meanwhile
    lock.lock();
    slot->state = State::kDone;
    done_cv_.notify_all();
  }
}

bool DecodePipeline::DecodeOneForLender() {
  std::unique_lock lock(mu_);
  Slot* slot = FirstQueued();
  if (slot == nullptr) return false;
  slot->state = State::kDecoding;
  lock.unlock();
  DecodeBatch(lender_decoder_, *slot->batch);
  lock.lock();
  slot->state = State::kDone;
  done_cv_.notify_all();
  return true;
}

DecodePipeline::Slot* DecodePipeline::FirstQueued() {
  for (Slot& s : slots_) {
    if (s.state == State::kQueued) return &s;
  }
  return nullptr;
}

void DecodePipeline::HelpOrWait() {
  std::unique_lock lock(mu_);
  if (Slot* slot = FirstQueued()) {
    slot->state = State::kDecoding;
    lock.unlock();
    DecodeBatch(own_decoder_, *slot->batch);
    lock.lock();
    slot->state = State::kDone;
    return;
  }
  done_cv_.wait(lock, [&] { return slots_.front().state == State::kDone; });
}

void DecodePipeline::DeliverDone(EventSink& sink, DecodeCounts& total) {
  for (;;) {
    std::unique_ptr<EventBatch> batch;
    {
      std::lock_guard lock(mu_);
      if (slots_.empty() || slots_.front().state != State::kDone) return;
      batch = std::move(slots_.front().batch);
      slots_.pop_front();
    }
    for (size_t i = 0; i < batch->decoded; ++i) sink.OnEvent(batch->events[i]);
    total.Add(batch->counts);
    if (spare_batches_.size() < max_in_flight_ + 1) {
      batch->entries.clear();
      batch->decoded = 0;
      batch->unescaped.clear();
      batch->counts = DecodeCounts{};
      if (batch->bytes.size() > kMaxRecycledBytes) ByteBuffer().swap(batch->bytes);
      if (batch->events.capacity() * sizeof(TraceEvent) > kMaxRecycledBytes) {
        std::vector<TraceEvent>().swap(batch->events);
      }
      spare_batches_.push_back(std::move(batch));
    }
  }
}

void DecodePipeline::Submit(std::unique_ptr<EventBatch> batch, EventSink& sink,
                            DecodeCounts& total) {
  if (helpers_.size() < static_cast<size_t>(helper_threads_)) {
    for (int i = 0; i < helper_threads_; ++i) helpers_.emplace_back([this] { HelperLoop(); });
  }
  {
    std::lock_guard lock(mu_);
    slots_.push_back(Slot{std::move(batch), State::kQueued});
  }
  work_cv_.notify_one();
  if (share_) share_->Notify();
  DeliverDone(sink, total);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (slots_.size() < max_in_flight_) break;
    }
    HelpOrWait();
    DeliverDone(sink, total);
  }
}

void DecodePipeline::Drain(EventSink& sink, DecodeCounts& total) {
  for (;;) {
    DeliverDone(sink, total);
    {
      std::lock_guard lock(mu_);
      if (slots_.empty()) return;
    }
    HelpOrWait();
  }
}

std::unique_ptr<EventBatch> DecodePipeline::NewBatch() {
  if (spare_batches_.empty()) return std::make_unique<EventBatch>();
  std::unique_ptr<EventBatch> b = std::move(spare_batches_.back());
  spare_batches_.pop_back();
  return b;
}

}  // namespace profwatch::parse
