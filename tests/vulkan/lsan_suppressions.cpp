// LeakSanitizer's suppressions for the test programs that open a Vulkan device, compiled into them
// (LeakSanitizer asks a program for them through this function; in a build without it, nothing
// calls it). Mesa's lavapipe in Debian 12 (libvulkan_lvp.so, 22.3.6) leaks allocations of its own
// (48 bytes from inside the driver, no launchwatch frame on the stack) that no Vulkan call frees:
// the driver's, not launchwatch's. lsan_mesa.supp holds the same line for programs run by hand
// (LSAN_OPTIONS=suppressions=tests/vulkan/lsan_mesa.supp).
extern "C" const char* __lsan_default_suppressions() { return "leak:libvulkan_lvp.so\n"; }
