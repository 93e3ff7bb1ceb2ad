// Compiled into every test executable: the tests never read the user's tuning
// cache (FP4MOE_TUNING_CACHE=off before main), so a test that runs "the
// heuristic's tactic" gets the heuristic's whatever was tuned on the machine.
// Tests of the cache set their own file (set_tuning_cache_path wins over the
// environment) or their own environment.
#include <cstdlib>

namespace {

[[maybe_unused]] const bool kCacheOff = [] { return ::setenv("FP4MOE_TUNING_CACHE", "off", 1) == 0; }();

}  // namespace
