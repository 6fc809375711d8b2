// Whether this build runs under a sanitizer, for the few tests whose deadlines must stretch with it (and the one
// that cannot run under UBSan: it takes every descriptor, and UBSan needs some of its own).
// GCC says so with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang (the asan preset's compiler)
// defines neither and answers __has_feature instead, so a test that read only GCC's macros ran with
// the plain build's deadline under clang's ASan, and failed when the machine was busy.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define AR_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define AR_TEST_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#ifndef AR_TEST_ASAN
#define AR_TEST_ASAN 1
#endif
#endif
#if __has_feature(undefined_behavior_sanitizer)
#define AR_TEST_UBSAN 1
#endif
#if __has_feature(thread_sanitizer)
#ifndef AR_TEST_TSAN
#define AR_TEST_TSAN 1
#endif
#endif
#endif
