// The one way to include <linux/kvm.h> in carapace.
//
// Debian 12's UAPI headers (Linux 6.1) declare variable-length KVM structs with
// __DECLARE_FLEX_ARRAY, which in C++ wraps the array behind an empty struct. An empty struct has
// size 1 in C++, so sizeof(kvm_cpuid2) is 12 instead of 8, the `entries` member moves to offset 12
// and the ioctl numbers built from sizeof() change: KVM answers EINVAL. Later kernels fixed the
// macro for C++; until then we declare the arrays as GNU zero-length arrays, which have the C
// layout. The static_asserts below catch any header that slips through.
#pragma once

#include <linux/stddef.h>
#undef __DECLARE_FLEX_ARRAY
#define __DECLARE_FLEX_ARRAY(TYPE, NAME) TYPE NAME[0]

#include <linux/kvm.h>

#include <cstddef>

static_assert(sizeof(kvm_cpuid2) == 8 && offsetof(kvm_cpuid2, entries) == 8);
static_assert(sizeof(kvm_msrs) == 8 && offsetof(kvm_msrs, entries) == 8);
static_assert(sizeof(kvm_msr_list) == 4 && offsetof(kvm_msr_list, indices) == 4);
static_assert(sizeof(kvm_xsave) == 4096);
static_assert(sizeof(kvm_irq_routing) == 8);
