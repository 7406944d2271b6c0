// Which sanitizer the test binary was built with, for the few checks a sanitizer's runtime
// makes impossible.
#pragma once

namespace pxl::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool address_sanitizer = true;
#else
inline constexpr bool address_sanitizer = false;
#endif
#else
inline constexpr bool address_sanitizer = false;
#endif

} // namespace pxl::testing
