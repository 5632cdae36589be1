// The 16550A UART seen from the guest: register file, interrupts, loopback, the receive FIFO, and
// accesses of every width at every offset (docs/security.md #9).
#include "vmm/devices/serial/serial.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/unit/devices/serial/pipe_reader.h"

namespace carapace {
namespace {

enum : uint64_t { kData = 0, kIer = 1, kIir = 2, kLcr = 3, kMcr = 4, kLsr = 5, kMsr = 6, kScr = 7 };

class FakeIrq : public IrqLine {
 public:
  void set_level(bool high) override { levels.push_back(high); }
  bool high() const { return !levels.empty() && levels.back(); }
  std::vector<bool> levels;
};

class SerialTest : public ::testing::Test {
 protected:
  uint8_t in(uint64_t reg) {
    uint8_t b = 0;
    serial_.read(reg, {&b, 1});
    return b;
  }
  void out(uint64_t reg, uint8_t v) { serial_.write(reg, {&v, 1}); }

  FakeIrq irq_;
  Serial serial_{nullptr, &irq_};
};

TEST(SerialOutputTest, TransmittedBytesReachTheSinkInOrder) {
  testing::PipeReader pipe;
  ASSERT_TRUE(pipe.ok());
  pipe.start();
  auto sink = std::make_unique<ConsoleSink>(pipe.write_fd(), true);
  Serial serial(sink.get(), nullptr);
  const std::string msg = "Linux version 6.1\r\nlogin: ";
  for (char c : msg) {
    uint8_t b = static_cast<uint8_t>(c);
    serial.write(0, {&b, 1});
  }
  sink->close();
  sink.reset();
  EXPECT_EQ(pipe.finish(), msg);
}

TEST_F(SerialTest, LineStatusReportsTransmitterEmpty) {
  uint8_t lsr = in(kLsr);
  EXPECT_EQ(lsr & 0x60, 0x60) << "THRE and TEMT";
  EXPECT_EQ(lsr & 0x01, 0) << "no data ready";
  out(kData, 'x');
  EXPECT_EQ(in(kLsr)&0x60, 0x60) << "transmission is instantaneous";
}

TEST_F(SerialTest, ScratchRegisterRoundTrips) {
  for (uint8_t v : {0x00, 0x5a, 0xa5, 0xff}) {
    out(kScr, v);
    EXPECT_EQ(in(kScr), v);
  }
}

TEST_F(SerialTest, DlabSwitchesToDivisorLatch) {
  out(kIer, 0x05);
  out(kLcr, 0x83);  // DLAB + 8N1
  EXPECT_EQ(in(kData), 0x0c) << "9600 baud after reset";
  EXPECT_EQ(in(kIer), 0x00);
  out(kData, 0x01);  // 115200 baud
  out(kIer, 0x00);
  EXPECT_EQ(in(kData), 0x01);
  EXPECT_EQ(in(kLcr), 0x83);
  out(kLcr, 0x03);
  EXPECT_EQ(in(kIer), 0x05) << "IER untouched by divisor writes";
  out(kLcr, 0x83);
  EXPECT_EQ(in(kData), 0x01) << "divisor kept";
  EXPECT_TRUE(irq_.levels.empty()) << "no THRE interrupt without IER bit 1";
}

TEST_F(SerialTest, ThreInterruptRaisedAndAcknowledgedByIirRead) {
  EXPECT_EQ(in(kIir), 0x01) << "no interrupt pending";
  out(kIer, 0x02);
  ASSERT_EQ(irq_.levels, std::vector<bool>{true});
  EXPECT_EQ(in(kIir), 0x02) << "THR empty";
  EXPECT_EQ(in(kIir), 0x01) << "reading IIR acknowledged it";
  EXPECT_EQ(irq_.levels, (std::vector<bool>{true, false}));
  // Each transmitted byte empties THR again and raises a new interrupt.
  out(kData, 'a');
  EXPECT_TRUE(irq_.high());
  EXPECT_EQ(in(kIir), 0x02);
  EXPECT_FALSE(irq_.high());
  // Disabling the interrupt drops the line even when THRE is pending.
  out(kData, 'b');
  EXPECT_TRUE(irq_.high());
  out(kIer, 0x00);
  EXPECT_FALSE(irq_.high());
}

TEST_F(SerialTest, FifoEnableShowsInIir) {
  out(kIir, 0x01);  // FCR: enable FIFOs
  EXPECT_EQ(in(kIir), 0xc1);
  out(kIir, 0x00);
  EXPECT_EQ(in(kIir), 0x01);
}

TEST_F(SerialTest, LoopbackEchoesIntoReceiver) {
  out(kMcr, 0x10);
  out(kData, 0x42);
  EXPECT_EQ(in(kLsr)&0x01, 0x01) << "data ready";
  EXPECT_EQ(in(kData), 0x42);
  EXPECT_EQ(in(kLsr)&0x01, 0x00);
  EXPECT_EQ(in(kData), 0x00) << "empty receiver reads 0";
}

TEST_F(SerialTest, LoopbackMirrorsModemControlIntoStatus) {
  const std::pair<uint8_t, uint8_t> cases[] = {
      {0x10, 0x00},  // nothing asserted
      {0x11, 0x20},  // DTR -> DSR
      {0x12, 0x10},  // RTS -> CTS
      {0x14, 0x40},  // OUT1 -> RI
      {0x18, 0x80},  // OUT2 -> DCD
      {0x1f, 0xf0},
  };
  for (auto [mcr, msr] : cases) {
    out(kMcr, mcr);
    EXPECT_EQ(in(kMcr), mcr);
    EXPECT_EQ(in(kMsr)&0xf0, msr) << "MCR " << std::hex << int(mcr);
  }
  out(kMcr, 0x00);
  EXPECT_EQ(in(kMsr)&0xb0, 0xb0) << "outside loopback: carrier, DSR and CTS asserted";
}

TEST_F(SerialTest, InputRespectsFifoCapacity) {
  std::vector<uint8_t> bytes(100);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(serial_.enqueue_input(bytes), Serial::kRxFifoCapacity);
  EXPECT_EQ(serial_.enqueue_input(bytes), 0u) << "full";
  for (size_t i = 0; i < Serial::kRxFifoCapacity; ++i) {
    ASSERT_EQ(in(kLsr)&1, 1);
    ASSERT_EQ(in(kData), static_cast<uint8_t>(i));
  }
  EXPECT_EQ(in(kLsr)&1, 0);
  EXPECT_EQ(serial_.enqueue_input({bytes.data(), 3}), 3u);
  EXPECT_TRUE(irq_.levels.empty()) << "no RX interrupt while IER bit 0 is clear";
}

TEST_F(SerialTest, InputRaisesRxInterruptUntilDrained) {
  out(kIer, 0x01);
  EXPECT_FALSE(irq_.high());
  const uint8_t two[2] = {'o', 'k'};
  ASSERT_EQ(serial_.enqueue_input(two), 2u);
  EXPECT_TRUE(irq_.high());
  EXPECT_EQ(in(kIir), 0x04);
  EXPECT_EQ(in(kIir), 0x04) << "reading IIR does not acknowledge RX data";
  EXPECT_EQ(in(kData), 'o');
  EXPECT_TRUE(irq_.high());
  EXPECT_EQ(in(kData), 'k');
  EXPECT_FALSE(irq_.high());
  EXPECT_EQ(in(kIir), 0x01);
}

TEST_F(SerialTest, FifoResetClearsInput) {
  const uint8_t b[3] = {1, 2, 3};
  ASSERT_EQ(serial_.enqueue_input(b), 3u);
  out(kIir, 0x03);  // FCR: enable + clear receive FIFO
  EXPECT_EQ(in(kLsr)&1, 0);
}

TEST_F(SerialTest, SecurityCheck9_WideAndUnalignedAccessesAreHarmless) {
  for (size_t width : {1, 2, 4, 8}) {
    for (uint64_t off = 0; off < Serial::kRegisterCount; ++off) {
      std::vector<uint8_t> buf(width, 0x5a);
      serial_.write(off, buf);
      serial_.read(off, buf);
    }
  }
  // Bytes past the last register read as ones, the rest as the registers they cover.
  out(kScr, 0x77);
  uint8_t wide[4] = {};
  serial_.read(kMsr, wide);
  EXPECT_EQ(wide[1], 0x77);
  EXPECT_EQ(wide[2], 0xff);
  EXPECT_EQ(wide[3], 0xff);
  // A write far past the registers changes nothing.
  const uint8_t junk[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  serial_.write(1000, junk);
  EXPECT_EQ(in(kScr), 0x77);
}

TEST(SerialBusTest, SecurityCheck9_StraddlingAccessNeverReachesUart) {
  IoBus bus;
  auto serial = std::make_shared<Serial>(nullptr, nullptr);
  ASSERT_TRUE(bus.insert(serial, Serial::kCom1Base, Serial::kRegisterCount, "com1").ok());
  uint8_t wide[8] = {};
  EXPECT_TRUE(bus.read(Serial::kCom1Base, wide));
  EXPECT_FALSE(bus.read(Serial::kCom1Base + 4, wide));
  EXPECT_TRUE(bus.read(Serial::kCom1Base + 5, {wide, 1}));
  EXPECT_EQ(wide[0] & 0x60, 0x60);
}

}  // namespace
}  // namespace carapace
