// The exact arithmetic of lib/common/semantics.hpp that a backend may take in another form: min/max
// normalisation of u8 sums by a multiply-high (minmax_mulhi, the CUDA 3x3 strip kernel's finish) against
// minmax_int's division, for every range it accepts and every value in each, and the ranges it refuses.
// (The bound is the proof's; the first range the multiply-high gets wrong is 4517.)
#include "check.hpp"
#include "common/semantics.hpp"

#include <cstdint>
#include <string>

int main() {
    size_t wrong = 0, refused = 0;
    for (long long den = 0; den <= gpk::kMinmaxMulhiMax + 64; ++den) {
        const uint32_t magic = gpk::minmax_mulhi_magic(den);
        if (den < 2 || den > gpk::kMinmaxMulhiMax) {
            refused += magic == 0;
            continue;
        }
        CHECK_MSG(magic != 0, "range " + std::to_string(den) + " refused");
        for (long long t = 0; t <= den; ++t)
            if ((long long)gpk::minmax_mulhi((uint32_t)t, magic) != gpk::minmax_int(t, 0, den)) {
                if (++wrong <= 5)
                    CHECK_MSG(false, "range " + std::to_string(den) + ", value " + std::to_string(t));
            }
    }
    CHECK_EQ(wrong, (size_t)0);
    CHECK_EQ(refused, (size_t)66); // 0, 1 and the 64 ranges past kMinmaxMulhiMax
    return check::finish("test_semantics");
}
