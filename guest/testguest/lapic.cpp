#include "guest/testguest/lapic.h"

namespace testguest {

bool lapic_send_ipi(uint8_t apic_id, uint32_t icr_low) {
  lapic_write(kLapicIcrHigh, uint32_t{apic_id} << 24);
  lapic_write(kLapicIcrLow, icr_low);  // this write sends it
  Deadline deadline(100'000'000);
  while (lapic_read(kLapicIcrLow) & kIcrDeliveryPending) {
    if (deadline.expired()) return false;
    cpu_relax();
  }
  return true;
}

}  // namespace testguest
