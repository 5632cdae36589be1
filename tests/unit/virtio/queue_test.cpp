// Queue: activation checks (docs/security.md #6, #10, #1 for rings, 22 for restored state), pop and
// add_used on a hand-built ring, a corrupt avail index (4), bounded memory for a guest that
// never reaps (12), and the event-idx suppression arithmetic with wrap-around.
#include "vmm/virtio/queue.h"

#include <gtest/gtest.h>

#include "tests/unit/virtio/test_ring.h"

namespace carapace::virtio {
namespace {

using namespace fake;

class QueueTest : public ::testing::Test {
 protected:
  Status activate_status(uint16_t max = 256) {
    auto q = Queue::activate(mem_, ring_.state, max);
    if (!q.ok()) return q.take_error();
    return {};
  }
  void expect_refused(const char* what, uint16_t max = 256) {
    auto s = activate_status(max);
    ASSERT_FALSE(s.ok()) << "expected refusal: " << what;
    EXPECT_TRUE(is_guest_error(s.error()));
    EXPECT_NE(s.error().message.find(what), std::string::npos) << s.error().message;
  }
  // One readable + one writable descriptor per request, heads 0, 2, 4, ...
  void add_request(uint16_t head) {
    ring_.set_desc(head, kBufferBase + head * 0x100ull, 8, kDescFNext, head + 1);
    ring_.set_desc(head + 1, kBufferBase + head * 0x100ull + 0x80, 16, kDescFWrite);
    ring_.publish(head);
  }

  GuestMemory mem_ = make_memory();
  TestRing ring_{mem_, 16};
};

TEST_F(QueueTest, ActivatesValidRings) {
  EXPECT_TRUE(activate_status().ok());
  ring_.state.size = 256;
  EXPECT_TRUE(activate_status(256).ok());
  ring_.state.ready = false;  // a queue the driver left alone is simply not ready
  auto q = Queue::activate(mem_, ring_.state, 256);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->ready());
  auto none = q->pop();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST_F(QueueTest, SecurityCheck6_RefusesBadSizes) {
  ring_.state.size = 0;
  expect_refused("size 0");
  ring_.state.size = 12;
  expect_refused("not a power of two");
  ring_.state.size = 512;
  expect_refused("above maximum", 256);
  ring_.state.size = 0x8000;
  expect_refused("above maximum", 256);
}

TEST_F(QueueTest, SecurityCheck10_RefusesMisalignedRings) {
  ring_.state.desc_table = kDescAddr + 8;
  expect_refused("descriptor table misaligned");
  ring_.state.desc_table = kDescAddr;
  ring_.state.avail_ring = kAvailAddr + 1;
  expect_refused("driver area misaligned");
  ring_.state.avail_ring = kAvailAddr;
  ring_.state.used_ring = kUsedAddr + 2;
  expect_refused("device area misaligned");
}

TEST_F(QueueTest, SecurityCheck10_RefusesOverlappingRings) {
  ring_.state.avail_ring = kDescAddr + 16 * 16 - 2;  // last bytes of the descriptor table
  expect_refused("rings overlap");
  ring_.state.avail_ring = kAvailAddr;
  ring_.state.used_ring = kAvailAddr + 4;
  expect_refused("rings overlap");
  ring_.state.used_ring = kDescAddr;
  expect_refused("rings overlap");
  // Adjacent is fine: avail ring right after the table, used ring right after avail's end.
  ring_.state.avail_ring = kDescAddr + 256;
  ring_.state.used_ring = kDescAddr + 256 + 40;
  EXPECT_TRUE(activate_status().ok());
}

TEST_F(QueueTest, SecurityCheck10_RingsIncludingEventIdxFieldsMustFitInRam) {
  // used ring: 6 + 8 * 16 = 134 bytes. Ending 2 bytes short of avail_event is refused.
  ring_.state.used_ring = kRegion0Size - 132;
  expect_refused("device area outside guest RAM");
  ring_.state.used_ring = kRegion0Size - 136;
  EXPECT_TRUE(activate_status().ok());
  ring_.state.avail_ring = kRegion1 - 8;  // in the gap
  expect_refused("driver area outside guest RAM");
  ring_.state.avail_ring = kAvailAddr;
  ring_.state.desc_table = UINT64_MAX - 15;  // wraps
  expect_refused("descriptor table outside guest RAM");
}

TEST_F(QueueTest, SecurityCheck22_RestoredStateIsValidatedLikeActivation) {
  add_request(0);
  add_request(2);
  Queue q = ring_.activate();
  auto c = q.pop();
  ASSERT_TRUE(c.ok() && c->has_value());
  ASSERT_TRUE(q.add_used((*c)->head(), 3).ok());
  QueueState saved = q.save();
  EXPECT_EQ(saved.next_avail, 1);
  EXPECT_EQ(saved.next_used, 1);
  // Restoring the saved state resumes where it left off.
  auto restored = Queue::activate(mem_, saved, 256);
  ASSERT_TRUE(restored.ok());
  auto next = restored->pop();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((*next)->head(), 2);
  // A tampered state file is refused exactly as a bad driver write would be.
  QueueState bad = saved;
  bad.size = 24;
  EXPECT_FALSE(Queue::activate(mem_, bad, 256).ok());
  bad = saved;
  bad.used_ring = kDescAddr + 4;
  EXPECT_FALSE(Queue::activate(mem_, bad, 256).ok());
  bad = saved;
  bad.size = 512;
  EXPECT_FALSE(Queue::activate(mem_, bad, 256).ok());
}

TEST_F(QueueTest, PopAndAddUsed) {
  add_request(0);
  add_request(4);
  Queue q = ring_.activate();
  auto a = q.pop();
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->head(), 0);
  EXPECT_EQ((*a)->readable_bytes(), 8u);
  EXPECT_EQ((*a)->writable_bytes(), 16u);
  auto b = q.pop();
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->head(), 4);
  auto none = q.pop();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(q.in_flight(), 2);
  // Completed out of order.
  ASSERT_TRUE(q.add_used(4, 16).ok());
  ASSERT_TRUE(q.add_used(0, 5).ok());
  EXPECT_EQ(ring_.used_idx(), 2);
  EXPECT_EQ(ring_.used(0).id, 4u);
  EXPECT_EQ(ring_.used(0).len, 16u);
  EXPECT_EQ(ring_.used(1).id, 0u);
  EXPECT_EQ(ring_.used(1).len, 5u);
  EXPECT_EQ(q.in_flight(), 0);
  // The device cannot return a chain it does not hold (a device bug, not a guest error).
  auto extra = q.add_used(0, 0);
  ASSERT_FALSE(extra.ok());
  EXPECT_FALSE(is_guest_error(extra.error()));
}

TEST_F(QueueTest, UndoPopReturnsTheSameChainAgain) {
  add_request(6);
  Queue q = ring_.activate();
  auto a = q.pop();
  ASSERT_TRUE(a.ok() && a->has_value());
  q.undo_pop();
  auto again = q.pop();
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->head(), 6);
}

TEST_F(QueueTest, SecurityCheck1_InvalidChainCompletesEmptyAndQueueGoesOn) {
  ring_.set_desc(0, kRegion0Size - 4, 8, 0);  // straddles the end of region 0
  ring_.publish(0);
  add_request(2);
  Queue q = ring_.activate();
  auto c = q.pop();
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->head(), 2);  // the bad chain was skipped...
  EXPECT_EQ(ring_.used_idx(), 1);
  EXPECT_EQ(ring_.used(0).id, 0u);  // ...and handed back with length 0
  EXPECT_EQ(ring_.used(0).len, 0u);
  EXPECT_EQ(q.counters().invalid_chains, 1u);
  EXPECT_TRUE(q.needs_notification());
}

TEST_F(QueueTest, SecurityCheck4_AvailIndexTooFarAheadBreaksTheQueue) {
  add_request(0);
  Queue q = ring_.activate();
  auto c = q.pop();
  ASSERT_TRUE(c.ok() && c->has_value());
  ASSERT_TRUE(q.add_used(0, 0).ok());
  // The driver claims 17 new buffers on a 16-entry queue.
  ring_.set_avail_idx(static_cast<uint16_t>(ring_.avail_idx() + 17));
  auto bad = q.pop();
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(is_guest_error(bad.error()));
  EXPECT_EQ(q.counters().broken, 1u);
  // Sticky: even after the driver "fixes" the index, nothing is popped (or processed twice).
  ring_.set_avail_idx(2);
  EXPECT_FALSE(q.pop().ok());
  EXPECT_FALSE(q.enable_notification());
  EXPECT_EQ(ring_.used_idx(), 1);
  EXPECT_EQ(q.save().next_avail, 1);
}

TEST_F(QueueTest, SecurityCheck4_AvailIndexGoingBackwardsBreaksTheQueue) {
  add_request(0);
  Queue q = ring_.activate();
  ASSERT_TRUE(q.pop().ok());
  ring_.set_avail_idx(0);  // 0 - 1 == 65535 ahead
  EXPECT_FALSE(q.pop().ok());
}

TEST_F(QueueTest, SecurityCheck4_HeadIndexOutOfRangeBreaksTheQueue) {
  ring_.publish(16);
  Queue q = ring_.activate();
  EXPECT_FALSE(q.pop().ok());
  EXPECT_EQ(q.counters().broken, 1u);
}

TEST_F(QueueTest, SecurityCheck12_DeviceHoldsAtMostQueueSizeChains) {
  // A driver that submits forever and never sees completions: the device cannot be made to hold
  // more than `size` chains, whatever avail.idx says.
  ring_.set_desc(0, kBufferBase, 8, 0);
  Queue q = ring_.activate();
  std::vector<DescriptorChain> held;
  auto drain = [&] {
    for (;;) {
      auto c = q.pop();
      ASSERT_TRUE(c.ok());
      if (!c->has_value()) return;
      held.push_back(std::move(**c));
    }
  };
  for (int i = 0; i < 16; ++i)
    ring_.publish(0);
  drain();
  EXPECT_EQ(held.size(), 16u);
  // 16 more: legal for the index arithmetic, but the device already holds 16.
  for (int i = 0; i < 16; ++i)
    ring_.publish(0);
  drain();
  EXPECT_EQ(held.size(), 16u);
  EXPECT_EQ(q.in_flight(), 16);
  EXPECT_FALSE(q.enable_notification());  // no busy loop while the device is full
  // Each held chain is bounded too (at most 2 * size segments); here one segment each.
  for (const auto& c : held)
    EXPECT_EQ(c.readable().size(), 1u);
  // Completing one lets exactly one more in.
  ASSERT_TRUE(q.add_used(0, 0).ok());
  held.pop_back();
  drain();
  EXPECT_EQ(held.size(), 16u);
  // Past that, the index is more than `size` ahead: the queue is broken, not a memory sink.
  for (int i = 0; i < 16; ++i)
    ring_.publish(0);
  EXPECT_FALSE(q.pop().ok());
}

TEST_F(QueueTest, SecurityCheck12_NeverReapingGuestKeepsDeviceStateConstant) {
  // 200000 requests through a 16-entry ring whose driver never reads the used ring: the used
  // ring just wraps; the device keeps no per-request state once a request completes.
  ring_.set_desc(0, kBufferBase, 8, kDescFWrite);
  Queue q = ring_.activate();
  for (int i = 0; i < 200000; ++i) {
    ring_.publish(0);
    auto c = q.pop();
    ASSERT_TRUE(c.ok() && c->has_value());
    ASSERT_TRUE(q.add_used((*c)->head(), 8).ok());
    ASSERT_EQ(q.in_flight(), 0);
  }
  EXPECT_EQ(ring_.used_idx(), static_cast<uint16_t>(200000));
}

TEST_F(QueueTest, NotificationWithoutEventIdxHonoursNoInterruptFlag) {
  add_request(0);
  add_request(2);
  Queue q = ring_.activate();
  EXPECT_FALSE(q.needs_notification());  // nothing used yet
  auto c = q.pop();
  ASSERT_TRUE(q.add_used((*c)->head(), 1).ok());
  EXPECT_TRUE(q.needs_notification());
  EXPECT_FALSE(q.needs_notification());  // already signalled
  ring_.set_avail_flags(kAvailFNoInterrupt);
  c = q.pop();
  ASSERT_TRUE(q.add_used((*c)->head(), 1).ok());
  EXPECT_FALSE(q.needs_notification());
}

// Runs `count` requests through the queue (starting from next_used == start) and asks whether to
// notify, with the driver's used_event set to `used_event`.
bool notify_after(uint16_t start, uint16_t count, uint16_t used_event) {
  GuestMemory mem = make_memory();
  TestRing ring(mem, 16);
  ring.state.event_idx = true;
  ring.state.next_avail = start;
  ring.state.next_used = start;
  ring.set_avail_idx(start);
  ring.set_desc(0, kBufferBase, 8, kDescFWrite);
  ring.set_used_event(used_event);
  Queue q = ring.activate();
  for (uint16_t i = 0; i < count; ++i) {
    ring.publish(0);
    auto c = q.pop();
    EXPECT_TRUE(c.ok() && c->has_value());
    EXPECT_TRUE(q.add_used(0, 8).ok());
  }
  return q.needs_notification();
}

TEST(QueueEventIdxTest, SuppressionMath) {
  // Notify iff used_event is in [old, new): the driver asked to hear when entry used_event is used.
  EXPECT_TRUE(notify_after(0, 1, 0));
  EXPECT_FALSE(notify_after(0, 1, 1));
  EXPECT_TRUE(notify_after(10, 3, 12));
  EXPECT_FALSE(notify_after(10, 3, 13));
  EXPECT_FALSE(notify_after(10, 3, 9));  // already passed before this batch
}

TEST(QueueEventIdxTest, SuppressionMathWrapsAt65535) {
  EXPECT_TRUE(notify_after(65534, 4, 65535));  // old 65534, new 2
  EXPECT_TRUE(notify_after(65534, 4, 0));
  EXPECT_TRUE(notify_after(65534, 4, 1));
  EXPECT_FALSE(notify_after(65534, 4, 2));
  EXPECT_FALSE(notify_after(65534, 4, 65533));
  EXPECT_TRUE(notify_after(65535, 1, 65535));
  EXPECT_FALSE(notify_after(65535, 1, 0));
}

TEST_F(QueueTest, EnableNotificationWritesAvailEventAndRechecks) {
  ring_.state.event_idx = true;
  add_request(0);
  Queue q = ring_.activate();
  auto c = q.pop();
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_FALSE(q.enable_notification());
  EXPECT_EQ(ring_.avail_event(), 1);  // "notify me when you make entry 1 available"
  add_request(2);
  EXPECT_TRUE(q.enable_notification());  // arrived meanwhile: pop again before sleeping
}

}  // namespace
}  // namespace carapace::virtio
