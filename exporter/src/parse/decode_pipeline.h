// DecodePipeline: decodes batches of trace-event texts on helper threads
// while the JSON trace parser's thread goes on scanning, and hands the events
// to the sink in file order on the parser's thread.
//
// Why: on a 2-core machine one thread inflating and one thread scanning,
// decoding and aggregating leaves the second thread the bottleneck (decoding
// is its largest part). Decoding is the one stage that needs no order, so it
// is done in batches by whichever thread is free: helper threads, a thread
// that lends its idle time through a WorkShare (the read-ahead thread while
// its buffers are full), and the parser's own thread when it is ahead (it
// never waits while a batch is still undecoded). At most `max_in_flight` batches (each one read
// buffer of about ParseOptions::chunk_bytes plus its decoded events) are held, so memory stays
// bounded.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/byte_buffer.h"
#include "core/work_share.h"
#include "parse/event_decoder.h"
#include "parse/limits.h"
#include "parse/trace_parser.h"

namespace profwatch::parse {

// One read buffer of the parser and the entries in it that passed the
// scanner's checks, plus (once decoded) their events.
struct EventBatch {
  ByteBuffer bytes;  // the parser's buffer, handed over whole (with padding)
  std::vector<std::pair<size_t, size_t>> entries;  // (offset, length) of each object
  TimeBase base;                                   // known: set before batching starts
  // Filled by decoding: events[0, decoded). Slots past `decoded` are stale
  // events of an earlier use of the batch, kept to be overwritten.
  std::vector<TraceEvent> events;
  size_t decoded = 0;
  std::deque<std::string> unescaped;  // strings with escapes, copied out of the decoder
  DecodeCounts counts;
};

class DecodePipeline {
 public:
  // `share` (may be null): a lender's idle time decodes batches too.
  DecodePipeline(int helper_threads, bool dur_as_double, std::shared_ptr<WorkShare> share,
                 size_t max_in_flight = 4, bool decode_runs = true);
  ~DecodePipeline();  // withdraws the offer, stops and joins the helpers
  DecodePipeline(const DecodePipeline&) = delete;
  DecodePipeline& operator=(const DecodePipeline&) = delete;

  // Queues `batch`, then delivers every decoded batch at the front to `sink`
  // (adding its counts to `total`); while `max_in_flight` are queued, decodes
  // one itself or waits for the oldest.
  void Submit(std::unique_ptr<EventBatch> batch, EventSink& sink, DecodeCounts& total);
  // Decodes and delivers everything queued.
  void Drain(EventSink& sink, DecodeCounts& total);
  // A delivered batch to fill again, or a new one. Its vectors keep their
  // capacity (bytes: a read buffer for the parser), so batches cost no fresh
  // memory (page faults and zeroing) after the first few. A buffer that grew
  // past kMaxRecycledBytes for an outsized event is freed instead, so the
  // spares stay small whatever the events.
  std::unique_ptr<EventBatch> NewBatch();

 private:
  enum class State { kQueued, kDecoding, kDone };
  struct Slot {
    std::unique_ptr<EventBatch> batch;
    State state = State::kQueued;
  };

  void HelperLoop();
  // The chore offered through the WorkShare: decodes one queued batch.
  bool DecodeOneForLender();
  // REQUIRES: mu_ held. The oldest queued slot, or null.
  Slot* FirstQueued();
  // Decodes one queued batch on this thread, or waits for the oldest to be
  // done when none is queued. REQUIRES: !slots_.empty().
  void HelpOrWait();
  // Delivers the decoded batches at the front, in order.
  void DeliverDone(EventSink& sink, DecodeCounts& total);
  static void DecodeBatch(EventDecoder& decoder, EventBatch& batch);

  const int helper_threads_;
  const bool dur_as_double_;
  const bool decode_runs_;
  const size_t max_in_flight_;
  EventDecoder own_decoder_;     // for batches decoded on the parser's thread
  EventDecoder lender_decoder_;  // for the WorkShare's chores (one runs at a time)
  std::shared_ptr<WorkShare> share_;

  std::mutex mu_;
  std::condition_variable work_cv_;  // a batch was queued, or stop
  std::condition_variable done_cv_;  // a batch was decoded
  std::deque<Slot> slots_;           // in file order; guarded by mu_
  bool stop_ = false;
  std::vector<std::thread> helpers_;  // started at the first Submit

  std::vector<std::unique_ptr<EventBatch>> spare_batches_;  // parser's thread only
};

}  // namespace profwatch::parse
