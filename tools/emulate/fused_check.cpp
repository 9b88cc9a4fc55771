// The fused separable kernel (lib/cuda/convolve/fused.cuh) on the emulated device against a direct row pass
// then column pass with the same order of additions: bit-identical, for several tap counts, every border,
// images of one to three strips and runs of 8 to 40 rows.
#include "cuda/convolve/fused.cuh"
#include <cstdio>
#include <random>
#include <vector>
using namespace gpk::cuda::conv;
static int failures = 0, checks = 0;
template <int K> void run_case(int W, int H, int border, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> img(size_t(W) * H), out(size_t(W) * H, NAN), rt(K), ct(K);
    for (auto &v : img) v = u(rng);
    for (auto &v : rt) v = u(rng);
    for (auto &v : ct) v = u(rng);
    // reference: row pass then column pass, sums in tap order, border rule on padded rows and columns
    const int R = K / 2;
    std::vector<float> mid(size_t(W) * (H + 2 * R));
    for (int p = 0; p < H + 2 * R; ++p) {
        long long sr = gpk::border_index(p - R, H, border);
        for (int x = 0; x < W; ++x) {
            float a = 0;
            for (int t = 0; t < K; ++t) {
                long long c = gpk::border_index(x - R + t, W, border);
                float v = (sr < 0 || c < 0) ? 0.f : img[size_t(sr) * W + c];
                a += v * rt[t];
            }
            mid[size_t(p) * W + x] = a;
        }
    }
    std::vector<float> ref(size_t(W) * H);
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            float a = 0;
            for (int t = 0; t < K; ++t) a += mid[size_t(y + t) * W + x] * ct[t];
            ref[size_t(y) * W + x] = a;
        }
    SourceRows src{reinterpret_cast<const char *>(img.data()), size_t(W) * 4, H, -R};
    Shape sh{W, 1, border, H};
    Output o{};
    o.base = reinterpret_cast<char *>(out.data());
    o.pitch = size_t(W) * 4;
    o.dtype = GPK_F32;
    o.normalize = GPK_NORMALIZE_NONE;
    Taps<float, kMaxTaps1D> trow{}, tcol{};
    for (int t = 0; t < K; ++t) trow.t[t] = rt[t], tcol.t[t] = ct[t];
    for (int rows : {8, 16, 24, 40}) {
        if (rows < 8) continue;
        std::fill(out.begin(), out.end(), NAN);
        dim3 grid((W + kFusedW - 1) / kFusedW, (H + rows - 1) / rows);
        emu_launch(separable_fused_kernel<K>, grid, dim3(kFusedThreads), FusedShape<K>::kSmem, nullptr, src,
                   sh, o, trow, tcol, rows);
        size_t bad = 0;
        for (size_t i = 0; i < ref.size(); ++i) bad += !(out[i] == ref[i]);
        ++checks;
        if (bad) {
            ++failures;
            std::printf("FAIL K=%d %dx%d border %d rows %d: %zu differ\n", K, W, H, border, rows, bad);
        }
    }
}
int main() {
    for (int border = 0; border < 5; ++border) {
        run_case<3>(130, 19, border, 1);
        run_case<17>(257, 21, border, 2);
        run_case<65>(129, 13, border, 3);
        run_case<5>(1, 9, border, 4);
        run_case<9>(40, 1, border, 5);
        std::printf("border %d: %d checks %d failures\n", border, checks, failures);
        std::fflush(stdout);
    }
    std::printf("%d checks, %d failed\n", checks, failures);
    std::fflush(stdout);
    std::_Exit(failures != 0);
}
