// A library that opens but is not CUPTI (no cuptiGetVersion), for cupti_places_test.
extern "C" __attribute__((visibility("default"))) int launchwatch_not_cupti() { return 0; }
