// The contiguous-layout tile scheduler (deep_gemm/include/deep_gemm/scheduler/grouped_scheduler.cuh) run on the
// CPU: its device code only needs blockIdx, gridDim and __ldg, defined here, so every CTA of a persistent grid
// can walk its tiles and the walks can be checked against the layout rules without a GPU.
//   - 2-CTA clusters (either pair order): both CTAs visit their tiles in step, with the same number of K blocks,
//     and agree on whether they share B (then they read one group's B tile).
//   - Every row of D gets what the padding mode promises: its group's product, zeros (kZero) or, for padding
//     rows (kUnspecified), the product with the group of the alignment block it lies in, or nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <tuple>
#include <type_traits>
#include <vector>

// Host stand-ins for the CUDA built-ins the scheduler headers use (this file includes no CUDA header).
#define __host__
#define __device__
#define __forceinline__ inline
struct HostDim3 {
    unsigned x = 0;
};
HostDim3 blockIdx, gridDim;
template <typename T>
T __ldg(const T* p) {
    return *p;
}
inline uint64_t __cvta_generic_to_shared(const void*) { return 0; }

#include "../../deep_gemm/include/deep_gemm/scheduler/grouped_scheduler.cuh"

namespace {

using deep_gemm::PaddingRows;
constexpr uint32_t kAlign = 128, kN = 640, kK = 1024, kBlockN = 128, kGroupN = 8;

// A contiguous layout: each group's rows start at a multiple of kAlign, `tail` padding rows at the end.
struct Layout {
    std::vector<int32_t> row_group;  // [m], -1 padding
    std::vector<int32_t> psum_ends;  // [groups]: the end row of each group's rows
};

Layout make_layout(const std::vector<uint32_t>& group_rows, uint32_t tail) {
    Layout l;
    for (size_t g = 0; g < group_rows.size(); ++g) {
        const uint32_t start = uint32_t(l.row_group.size());
        const uint32_t aligned = (group_rows[g] + kAlign - 1) / kAlign * kAlign;
        for (uint32_t r = 0; r < aligned; ++r) l.row_group.push_back(r < group_rows[g] ? int32_t(g) : -1);
        l.psum_ends.push_back(int32_t(start + group_rows[g]));
    }
    l.row_group.insert(l.row_group.end(), tail, -1);
    return l;
}

// One visit of a tile by one CTA, as the kernel would run it.
struct Visit {
    uint32_t m_block, n_block, k, b_group, d_row_end;
    bool shares_b;
    std::vector<bool> valid;  // row_valid() of the tile's rows (kZero)
};

// The tiles CTA `cta` of a `grid`-CTA launch visits: record(scheduler, m_block, n_block) for each, in order.
template <typename Scheduler, typename Record>
auto walk_tiles(uint32_t cta, uint32_t grid, uint32_t m, uint32_t n, const int32_t* layout, uint32_t groups,
                Record record) {
    blockIdx.x = cta, gridDim.x = grid;
    Scheduler s(m, n, layout, groups);
    std::vector<decltype(record(s, 0u, 0u))> visits;
    uint32_t m_block, n_block;
    while (s.next(m_block, n_block)) {
        visits.push_back(record(s, m_block, n_block));
        EXPECT_LT(visits.size(), 100000u) << "runaway tile walk";
        if (visits.size() >= 100000u) break;
    }
    return visits;
}

template <typename Scheduler>
std::vector<Visit> walk(uint32_t cta, uint32_t grid, uint32_t m, const int32_t* layout, uint32_t groups) {
    return walk_tiles<Scheduler>(cta, grid, m, kN, layout, groups, [](const Scheduler& s, uint32_t mb, uint32_t nb) {
        Visit v{mb, nb, s.k_size(kK), s.b_group(), s.d_row_end(), s.pair_shares_b(), {}};
        for (uint32_t r = 0; r < Scheduler::kSegmentRows; ++r) v.valid.push_back(s.row_valid(s.d_row0() + r));
        return v;
    });
}

// What a row of one column block of D ends up as: -2 not written, -1 zeros, g the product with group g's B.
using RowOutcome = std::map<std::pair<uint32_t, uint32_t>, int>;

template <uint32_t kBlockM, bool kPsum, PaddingRows kPadding, typename Order>
void check(const Layout& l, uint32_t grid) {
    using Scheduler = deep_gemm::ContiguousLayoutScheduler<kBlockM, kBlockN, kGroupN, kPsum, kPadding, kAlign, Order>;
    const uint32_t m = uint32_t(l.row_group.size()), groups = uint32_t(l.psum_ends.size());
    const int32_t* layout = kPsum ? l.psum_ends.data() : l.row_group.data();
    constexpr bool kPairs = Scheduler::kPairsMBlocks || !std::is_same_v<Order, deep_gemm::GroupedOrderScheduler<kBlockM, kBlockN, kGroupN>>;
    RowOutcome written;
    for (uint32_t cta = 0; cta < grid; cta += kPairs ? 2 : 1) {
        std::vector<std::vector<Visit>> ctas = {walk<Scheduler>(cta, grid, m, layout, groups)};
        if (kPairs) ctas.push_back(walk<Scheduler>(cta + 1, grid, m, layout, groups));
        if (kPairs) {
            // The two pipelines stay in step: same tiles count, same K blocks, one answer on sharing B.
            ASSERT_EQ(ctas[0].size(), ctas[1].size()) << "cluster " << cta / 2;
            for (size_t i = 0; i < ctas[0].size(); ++i) {
                const Visit &a = ctas[0][i], &b = ctas[1][i];
                EXPECT_EQ(a.k, b.k) << "cluster " << cta / 2 << " tile " << i << ": K blocks differ";
                EXPECT_EQ(a.shares_b, b.shares_b) << "cluster " << cta / 2 << " tile " << i;
                if (a.shares_b) {
                    EXPECT_EQ(a.b_group, b.b_group) << "shared B of two groups";
                }
                if (Scheduler::kPairsMBlocks) {
                    EXPECT_EQ(a.n_block, b.n_block);
                    EXPECT_EQ(a.m_block ^ 1u, b.m_block);
                } else {
                    EXPECT_EQ(a.m_block, b.m_block);
                }
            }
        }
        for (const auto& visits : ctas) {
            for (const Visit& v : visits) {
                if (v.n_block * kBlockN >= kN) continue;  // an N pair's tile past N: its stores are clipped away
                EXPECT_LT(v.b_group, std::max(groups, 1u)) << "B group out of range";
                for (uint32_t r = 0; r < kBlockM; ++r) {
                    const uint32_t row = v.m_block * kBlockM + r;
                    if (row >= m || row >= v.d_row_end) continue;
                    const auto key = std::make_pair(row, v.n_block);
                    EXPECT_EQ(written.count(key), 0u) << "row " << row << " written twice";
                    int outcome = v.k == 0 ? -1 : int(v.b_group);
                    if (kPadding == PaddingRows::kZero && !v.valid[r]) outcome = -1;
                    written[key] = outcome;
                }
            }
        }
    }
    for (uint32_t row = 0; row < m; ++row) {
        int expected;
        if (kPadding == PaddingRows::kZero) {
            expected = l.row_group[row] >= 0 ? l.row_group[row] : -1;
        } else {
            // Padding rows: computed with the group of their alignment block's first row, if it has one.
            const int32_t g = l.row_group[row] >= 0 ? l.row_group[row] : l.row_group[row - row % kAlign];
            expected = g >= 0 ? g : -2;
        }
        for (uint32_t nb = 0; nb * kBlockN < kN; ++nb) {
            const auto it = written.find({row, nb});
            const int got = it == written.end() ? -2 : it->second;
            // kUnspecified promises nothing for a row of an all-padding alignment block (written or not).
            if (kPadding == PaddingRows::kUnspecified && expected == -2 && got < 0) continue;
            ASSERT_EQ(got, expected) << "row " << row << " (group " << l.row_group[row] << ") column block " << nb
                                     << " BLOCK_M " << kBlockM << (kPsum ? " psum" : " index");
        }
    }
}

template <uint32_t kBlockM, typename Order>
void check_all_modes() {
    // Two groups in one M pair, empty groups, padding blocks beside group blocks, an odd number of blocks,
    // and padding past the last group.
    const std::vector<std::pair<std::vector<uint32_t>, uint32_t>> layouts = {
        {{128, 1, 0, 256, 63, 200, 0, 513}, 0}, {{130, 0, 60}, 256}, {{300, 5}, 128}, {{77}, 0},
        {{1, 1, 1, 1, 1}, 384}, {{0, 0, 500}, 128}};
    for (const auto& [rows, tail] : layouts) {
        const Layout l = make_layout(rows, tail);
        for (const uint32_t grid : {2u, 6u, 132u}) {
            SCOPED_TRACE(testing::Message() << "layout of " << rows.size() << " groups, tail " << tail << ", grid " << grid);
            check<kBlockM, false, PaddingRows::kZero, Order>(l, grid);
            check<kBlockM, false, PaddingRows::kUnspecified, Order>(l, grid);
            check<kBlockM, true, PaddingRows::kZero, Order>(l, grid);
            check<kBlockM, true, PaddingRows::kUnspecified, Order>(l, grid);
        }
    }
}

template <uint32_t kBlockM>
using Single = deep_gemm::GroupedOrderScheduler<kBlockM, kBlockN, kGroupN>;
template <uint32_t kBlockM>
using PairsM = deep_gemm::ClusterPairScheduler<kBlockM, kBlockN, kGroupN>;
template <uint32_t kBlockM>
using PairsN = deep_gemm::ClusterPairNScheduler<kBlockM, kBlockN, kGroupN>;

TEST(ContiguousSchedulerHost, OneCtaPerTile) {
    check_all_modes<64, Single<64>>();
    check_all_modes<128, Single<128>>();
}

TEST(ContiguousSchedulerHost, PairsOfNBlocksShareA) {
    check_all_modes<128, PairsN<128>>();
}

TEST(ContiguousSchedulerHost, PairsOfMBlocksShareBOnlyInOneGroup) {
    check_all_modes<64, PairsM<64>>();
    check_all_modes<128, PairsM<128>>();
    // Some pairs share B and some do not, so both load paths run.
    const Layout l = make_layout({128, 1, 0, 256, 63, 200, 0, 513}, 0);
    blockIdx.x = 0, gridDim.x = 2;
    deep_gemm::ContiguousLayoutScheduler<128, kBlockN, kGroupN, false, PaddingRows::kZero, kAlign, PairsM<128>> s(
        uint32_t(l.row_group.size()), kN, l.row_group.data(), 8);
    int shared = 0, own = 0;
    uint32_t mb, nb;
    while (s.next(mb, nb)) (s.pair_shares_b() ? shared : own) += 1;
    EXPECT_GT(shared, 0);
    EXPECT_GT(own, 0);
}

}  // namespace

namespace {

// The K-grouped scheduler (kCluster 1 and 2): every tile of every group once, the CTAs of a cluster on M blocks
// 2p and 2p + 1 of one group and N block with one K range, and a tile past M only as a pair's second.
template <uint32_t kBlockM, uint32_t kCluster>
void check_k_grouped(const std::vector<int32_t>& ks, uint32_t m, uint32_t n, uint32_t grid) {
    using Scheduler = deep_gemm::KGroupedScheduler<kBlockM, kBlockN, kGroupN, false, kCluster>;
    const uint32_t m_blocks = (m + kBlockM - 1) / kBlockM, n_blocks = (n + kBlockN - 1) / kBlockN;
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, int> seen;  // (group, m block, n block) -> visits
    for (uint32_t cta = 0; cta < grid; cta += kCluster) {
        std::vector<std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>>> walks;
        for (uint32_t r = 0; r < kCluster; ++r) {
            walks.push_back(walk_tiles<Scheduler>(cta + r, grid, m, n, ks.data(), uint32_t(ks.size()),
                                                  [m](const Scheduler& s, uint32_t mb, uint32_t nb) {
                EXPECT_EQ(s.d_row0(), s.group_index() * m + mb * kBlockM);
                EXPECT_EQ(s.d_row_end(), s.group_index() * m + m);
                return std::make_tuple(s.group_index(), mb, nb, s.k_offset(), s.k_size(0));
            }));
        }
        if (kCluster == 2) {
            ASSERT_EQ(walks[0].size(), walks[1].size());
            for (size_t i = 0; i < walks[0].size(); ++i) {
                const auto &[g0, m0, n0, k00, k0] = walks[0][i];
                const auto &[g1, m1, n1, k01, k1] = walks[1][i];
                EXPECT_TRUE(g0 == g1 && n0 == n1 && k00 == k01 && k0 == k1) << "cluster " << cta / 2 << " tile " << i;
                EXPECT_TRUE(m0 % 2 == 0 && m1 == m0 + 1) << "M blocks " << m0 << ", " << m1;
            }
        }
        for (const auto& walk : walks) {
            for (const auto& [g, mb, nb, k_off, k] : walk) {
                EXPECT_LT(g, ks.size());
                EXPECT_EQ(k, uint32_t(ks[g]));
                EXPECT_EQ(k_off, uint32_t(std::accumulate(ks.begin(), ks.begin() + g, 0)));
                if (mb >= m_blocks) {
                    EXPECT_TRUE(kCluster == 2 && mb == m_blocks && m_blocks % 2 == 1) << "tile past M: " << mb;
                    continue;
                }
                ++seen[{g, mb, nb}];
            }
        }
    }
    EXPECT_EQ(seen.size(), ks.size() * m_blocks * n_blocks);
    for (const auto& [tile, visits] : seen) EXPECT_EQ(visits, 1) << "group " << std::get<0>(tile);
}

TEST(KGroupedSchedulerHost, OneCtaAndPairsOfMBlocks) {
    const std::vector<int32_t> ks = {384, 0, 256, 640, 128};
    for (const uint32_t grid : {2u, 8u, 132u}) {
        SCOPED_TRACE(testing::Message() << "grid " << grid);
        check_k_grouped<128, 1>(ks, 200, 530, grid);
        check_k_grouped<128, 2>(ks, 200, 530, grid);  // two M blocks: one pair
        check_k_grouped<128, 2>(ks, 333, 530, grid);  // three: the last pair's second tile past M
        check_k_grouped<64, 2>(ks, 7168, 2048, grid);
    }
}

}  // namespace

namespace {

// The masked scheduler (kCluster 1 and 2): every M block of every group's masked_m rows once per N block, the
// CTAs of a cluster on M blocks 2p and 2p + 1 of one group and N block, a tile past masked_m only as a pair's
// second (its rows start at or past d_row_end(): nothing written).
template <uint32_t kBlockM, uint32_t kCluster>
void check_masked(const std::vector<int32_t>& masked_m, uint32_t max_m, uint32_t n, uint32_t grid) {
    using Scheduler = deep_gemm::MaskedGroupedScheduler<kBlockM, kBlockN, kGroupN, kCluster>;
    const uint32_t n_blocks = (n + kBlockN - 1) / kBlockN;
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, int> seen;  // (group, m block, n block) -> visits
    for (uint32_t cta = 0; cta < grid; cta += kCluster) {
        std::vector<std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>> walks;
        for (uint32_t r = 0; r < kCluster; ++r) {
            walks.push_back(walk_tiles<Scheduler>(cta + r, grid, max_m, n, masked_m.data(), uint32_t(masked_m.size()),
                                                  [&](const Scheduler& s, uint32_t mb, uint32_t nb) {
                const uint32_t g = s.b_group();
                EXPECT_EQ(s.a_group(), g);
                EXPECT_EQ(s.d_row0(), g * max_m + mb * kBlockM);
                const uint32_t rows = uint32_t(std::clamp<int32_t>(masked_m[g], 0, int32_t(max_m)));
                EXPECT_EQ(s.d_row_end(), g * max_m + rows);
                if (mb * kBlockM >= rows) {
                    EXPECT_TRUE(kCluster == 2 && mb % 2 == 1 && (mb - 1) * kBlockM < rows) << "tile past masked_m";
                } else {
                    ++seen[{g, mb, nb}];
                }
                return std::make_tuple(g, mb, nb);
            }));
        }
        if (kCluster == 2) {
            ASSERT_EQ(walks[0].size(), walks[1].size());
            for (size_t i = 0; i < walks[0].size(); ++i) {
                const auto &[g0, m0, n0] = walks[0][i];
                const auto &[g1, m1, n1] = walks[1][i];
                EXPECT_TRUE(g0 == g1 && n0 == n1 && m0 % 2 == 0 && m1 == m0 + 1) << "cluster " << cta / 2 << " tile " << i;
            }
        }
    }
    size_t expected = 0;
    for (const int32_t rows : masked_m)
        expected += (uint32_t(std::clamp<int32_t>(rows, 0, int32_t(max_m))) + kBlockM - 1) / kBlockM * n_blocks;
    EXPECT_EQ(seen.size(), expected);
    for (const auto& [tile, visits] : seen) EXPECT_EQ(visits, 1) << "group " << std::get<0>(tile);
}

TEST(MaskedSchedulerHost, OneCtaAndPairsOfMBlocks) {
    // Empty, one-row, odd and even block counts, past max_m and negative (clamped).
    const std::vector<int32_t> masked_m = {0, 1, 64, 127, 128, 129, 200, 255, 256, 257, 300, 1000, -7};
    for (const uint32_t grid : {2u, 8u, 132u}) {
        SCOPED_TRACE(testing::Message() << "grid " << grid);
        check_masked<128, 1>(masked_m, 300, 640, grid);
        check_masked<128, 2>(masked_m, 300, 640, grid);
        check_masked<64, 2>(masked_m, 300, 640, grid);
        check_masked<256, 2>(masked_m, 300, 640, grid);
    }
}

}  // namespace
