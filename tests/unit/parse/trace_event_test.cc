// TraceEvent::Reset: decoders reuse one event per slot, so Reset must bring
// back every default a fresh TraceEvent has.
#include "parse/trace_event.h"

#include <gtest/gtest.h>

namespace profwatch::parse {
namespace {

TEST(TraceEventTest, ResetRestoresEveryField) {
  TraceEvent e;
  e.name = "n";
  e.cat = "c";
  e.pid = Id{IdKind::kInt, 7, {}};
  e.tid = Id{IdKind::kString, 0, "t"};
  e.ts_ps = 1;
  e.dur_ps = 2;
  e.dur_us = 3.0;
  e.args_name = "a";
  e.args_hlo_module = "m";
  e.args_input_dims = "[[1]]";
  e.args_concrete_inputs = "[\"\"]";
  e.args_input_type = "[\"float\"]";
  e.args_external_id = 9;
  e.has_args_external_id = true;
  e.args_correlation = 10;
  e.args_collective = "allreduce";
  e.args_dtype = "Float";
  e.args_pg_desc = "fsdp";
  e.args_pg_ranks = "[0, 1]";
  e.args_hlo_op = "all-gather-start.3";
  e.args_in_nelems = 6;
  e.args_out_nelems = 7;
  e.args_group_size = 8;
  e.args_bytes = 11;
  e.args_memop_details = "kind:unknown num_bytes:4 async:1";
  e.args_device = 4;
  e.args_stream = 5;
  e.ph = 'X';
  e.has_name = e.has_ts = e.has_dur = e.dur_exact = e.has_args_device = e.has_args_stream = true;

  e.Reset();
  const TraceEvent fresh;
  EXPECT_TRUE(e.name.empty());
  EXPECT_TRUE(e.cat.empty());
  EXPECT_TRUE(e.pid == fresh.pid);
  EXPECT_TRUE(e.tid == fresh.tid);
  EXPECT_EQ(e.ts_ps, 0);
  EXPECT_EQ(e.dur_ps, 0);
  EXPECT_EQ(e.dur_us, 0.0);
  EXPECT_TRUE(e.args_name.empty());
  EXPECT_TRUE(e.args_hlo_module.empty());
  EXPECT_TRUE(e.args_input_dims.empty());
  EXPECT_TRUE(e.args_concrete_inputs.empty());
  EXPECT_TRUE(e.args_input_type.empty());
  EXPECT_EQ(e.args_external_id, 0);
  EXPECT_FALSE(e.has_args_external_id);
  EXPECT_EQ(e.args_correlation, -1);
  EXPECT_TRUE(e.args_pg_desc.empty());
  EXPECT_TRUE(e.args_pg_ranks.empty());
  EXPECT_TRUE(e.args_collective.empty());
  EXPECT_TRUE(e.args_dtype.empty());
  EXPECT_TRUE(e.args_hlo_op.empty());
  EXPECT_EQ(e.args_in_nelems, -1);
  EXPECT_EQ(e.args_out_nelems, -1);
  EXPECT_EQ(e.args_group_size, -1);
  EXPECT_EQ(e.args_bytes, -1);
  EXPECT_TRUE(e.args_memop_details.empty());
  EXPECT_EQ(e.args_device, 0);
  EXPECT_EQ(e.args_stream, 0);
  EXPECT_EQ(e.ph, 0);
  EXPECT_FALSE(e.has_name || e.has_ts || e.has_dur || e.dur_exact || e.has_args_device ||
               e.has_args_stream);
}

}  // namespace
}  // namespace profwatch::parse
