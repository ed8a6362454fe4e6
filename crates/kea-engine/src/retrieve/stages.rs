//! The pure stages of the retrieval pipeline: score fusion (weighted or
//! RRF), MMR diversification, and the two-layer relevance filter. Each works
//! on `(chunk id, score)` lists and is tested on its own.

use std::collections::HashMap;

use crate::vectors::{cosine_of_norms, norm};

/// Scales scores to [0, 1] (all equal → all 1).
fn min_max(scores: &[(u64, f32)]) -> HashMap<u64, f32> {
    let (lo, hi) = scores.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &(_, s)| (lo.min(s), hi.max(s)));
    scores.iter().map(|&(id, s)| (id, if hi > lo { (s - lo) / (hi - lo) } else { 1.0 })).collect()
}

fn sorted(mut scored: Vec<(u64, f32)>) -> Vec<(u64, f32)> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

/// Weighted sum of min-max normalised scores; a list missing an id adds 0,
/// except for ids BM25 cannot see (`sparse_blind`: passages in another
/// language than the query's), whose dense score carries both weights, so
/// a strong cross-lingual dense hit is not buried by a structural zero.
pub fn weighted_fusion(
    dense: &[(u64, f32)],
    sparse: &[(u64, f32)],
    dense_weight: f32,
    sparse_weight: f32,
    sparse_blind: &dyn Fn(u64) -> bool,
) -> Vec<(u64, f32)> {
    let mut fused: HashMap<u64, f32> = HashMap::new();
    for (id, s) in min_max(dense) {
        let weight = if sparse_blind(id) { dense_weight + sparse_weight } else { dense_weight };
        *fused.entry(id).or_default() += weight * s;
    }
    for (id, s) in min_max(sparse) {
        *fused.entry(id).or_default() += sparse_weight * s;
    }
    sorted(fused.into_iter().collect())
}

/// Weighted reciprocal rank fusion: Σ weight / (k + rank), ranks from 1.
pub fn rrf_fusion(lists: &[(&[(u64, f32)], f32)], k: f32) -> Vec<(u64, f32)> {
    let mut fused: HashMap<u64, f32> = HashMap::new();
    for &(list, weight) in lists {
        for (rank, &(id, _)) in list.iter().enumerate() {
            *fused.entry(id).or_default() += weight / (k + rank as f32 + 1.0);
        }
    }
    sorted(fused.into_iter().collect())
}

/// Maximal marginal relevance: picks `select` candidates, each maximising
/// λ·relevance − (1−λ)·(highest similarity to one already picked).
/// Relevance is the candidate's score scaled by the best score; candidates
/// without a vector are treated as dissimilar to everything.
pub fn mmr(candidates: &[(u64, f32)], vectors: &HashMap<u64, Vec<f32>>, lambda: f32, select: usize) -> Vec<(u64, f32)> {
    let best = candidates.iter().map(|c| c.1).fold(f32::NEG_INFINITY, f32::max);
    let scale = if best > 0.0 { best } else { 1.0 };
    // Each candidate's highest similarity to anything picked so far, kept up
    // to date as picks are made (O(select × candidates) similarities).
    let mut redundancy = vec![0.0f32; candidates.len()];
    let mut taken = vec![false; candidates.len()];
    let with_norms: Vec<Option<(&[f32], f32)>> = candidates.iter().map(|(id, _)| vectors.get(id).map(|v| (v.as_slice(), norm(v)))).collect();
    let mut picked: Vec<(u64, f32)> = Vec::with_capacity(select);
    while picked.len() < select {
        let Some((index, value)) = candidates
            .iter()
            .enumerate()
            .filter(|(i, _)| !taken[*i])
            .map(|(i, &(_, score))| (i, lambda * score / scale - (1.0 - lambda) * redundancy[i]))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        else {
            break;
        };
        taken[index] = true;
        let id = candidates[index].0;
        picked.push((id, value));
        if let Some((chosen, chosen_norm)) = with_norms[index] {
            for (i, other) in with_norms.iter().enumerate() {
                if let (false, Some((v, v_norm))) = (taken[i], other) {
                    redundancy[i] = redundancy[i].max(cosine_of_norms(chosen, chosen_norm, v, *v_norm));
                }
            }
        }
    }
    picked
}

/// Logistic function: maps a cross-encoder logit to (0, 1).
/// Cross-lingual balance for dense candidates: multilingual embedders score
/// same-language pairs higher, so a passage in the other language never
/// reaches the shortlist. Shifts the other language's scores so its best
/// candidate ties with the query language's `behind + 1`-th best (the top
/// same-language passages keep their lead), then keeps the best `k`.
/// Returns the shift.
pub fn balance_languages(candidates: &[(u64, f32)], is_other: impl Fn(u64) -> bool, behind: usize, k: usize) -> (Vec<(u64, f32)>, f32) {
    let mut same: Vec<f32> = candidates.iter().filter(|(id, _)| !is_other(*id)).map(|c| c.1).collect();
    same.sort_by(|a, b| b.total_cmp(a));
    let other = candidates.iter().filter(|(id, _)| is_other(*id)).map(|c| c.1).fold(f32::NEG_INFINITY, f32::max);
    let target = same.get(behind).or(same.last()).copied();
    let shift = match target {
        Some(target) if other.is_finite() => (target - other).max(0.0),
        _ => 0.0,
    };
    let mut balanced: Vec<(u64, f32)> = candidates.iter().map(|&(id, s)| (id, if is_other(id) { s + shift } else { s })).collect();
    balanced.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    balanced.truncate(k);
    (balanced, shift)
}

/// The two-layer filter on 0–1 scores, best first: (1) drop scores below
/// `min_score`, unless that would drop everything; (2) when more than one
/// remains, walk down from the best and stop at the first whose drop from
/// the best exceeds `max_relative_drop`.
pub fn two_layer_filter(scored: &[(u64, f32)], min_score: f32, max_relative_drop: f32) -> Vec<(u64, f32)> {
    let all = sorted(scored.to_vec());
    let absolute: Vec<(u64, f32)> = all.iter().copied().filter(|&(_, s)| s >= min_score).collect();
    if absolute.is_empty() {
        return all;
    }
    if absolute.len() == 1 {
        return absolute;
    }
    let best = absolute[0].1;
    absolute.into_iter().take_while(|&(_, s)| best <= 0.0 || (best - s) / best <= max_relative_drop).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_other_languages_best_candidate_ties_with_the_best() {
        // Ids ≥ 10 are in the other language and score lower across the board.
        let candidates = [(1, 0.90), (2, 0.89), (3, 0.88), (10, 0.84), (11, 0.80)];
        let (balanced, shift) = balance_languages(&candidates, |id| id >= 10, 1, 3);
        assert!((shift - 0.05).abs() < 1e-5);
        let ids: Vec<u64> = balanced.iter().map(|c| c.0).collect();
        assert_eq!(ids, [1, 2, 10], "the best other-language passage is shortlisted behind the best same-language one");
        // In fusion the other-language passage (BM25 cannot match it) keeps its dense score whole.
        let sparse = [(1, 3.0), (2, 1.0)];
        let fused = weighted_fusion(&balanced, &sparse, 0.6, 0.4, &|id| id >= 10);
        assert!(fused.iter().take(3).any(|c| c.0 == 10), "{fused:?}");
        let (same_only, shift) = balance_languages(&candidates[..3], |id| id >= 10, 1, 3);
        assert_eq!((same_only.len(), shift), (3, 0.0));
    }

    fn ids(list: &[(u64, f32)]) -> Vec<u64> {
        list.iter().map(|x| x.0).collect()
    }

    #[test]
    fn filter_worked_example() {
        let scores = [0.85, 0.72, 0.45, 0.23, 0.15, 0.35, 0.12];
        let scored: Vec<(u64, f32)> = scores.iter().enumerate().map(|(i, &s)| (i as u64, s)).collect();
        let kept: Vec<f32> = two_layer_filter(&scored, 0.28, 0.5).into_iter().map(|x| x.1).collect();
        assert_eq!(kept, [0.85, 0.72, 0.45]);
    }

    #[test]
    fn filter_keeps_everything_rather_than_nothing() {
        let scored = [(1, 0.2), (2, 0.1)];
        assert_eq!(ids(&two_layer_filter(&scored, 0.28, 0.5)), [1, 2]);
        assert_eq!(ids(&two_layer_filter(&[(1, 0.9), (2, 0.1)], 0.28, 0.5)), [1], "one survivor skips the relative layer");
    }

    #[test]
    fn weighted_fusion_normalises_each_list() {
        let dense = [(1, 0.9), (2, 0.8), (3, 0.7)];
        let sparse = [(3, 12.0), (4, 2.0)];
        let fused = weighted_fusion(&dense, &sparse, 0.6, 0.4, &|_| false);
        assert_eq!(ids(&fused), [1, 3, 2, 4]);
        assert!((fused[0].1 - 0.6).abs() < 1e-6 && (fused[1].1 - 0.4).abs() < 1e-6);
    }

    #[test]
    fn rrf_rewards_agreement() {
        let a = [(1, 0.0), (2, 0.0), (3, 0.0)];
        let b = [(4, 0.0), (2, 0.0), (5, 0.0)];
        let fused = rrf_fusion(&[(&a, 1.0), (&b, 1.0)], 60.0);
        assert_eq!(fused[0].0, 2, "ranked second in both beats first in one");
        assert!((fused[0].1 - 2.0 / 62.0).abs() < 1e-6);
        let leaning = rrf_fusion(&[(&a, 1.0), (&b, 0.01)], 60.0);
        assert_eq!(leaning[0].0, 1, "a low weight makes a list count less");
    }

    /// MMR as written in the textbook: each step computes every
    /// candidate's similarity to every pick so far (no cached norms or
    /// running maxima), the reference of [`mmr`].
    fn textbook_mmr(candidates: &[(u64, f32)], vectors: &HashMap<u64, Vec<f32>>, lambda: f32, select: usize) -> Vec<(u64, f32)> {
        let best = candidates.iter().map(|c| c.1).fold(f32::NEG_INFINITY, f32::max);
        let scale = if best > 0.0 { best } else { 1.0 };
        let mut picked: Vec<(usize, f32)> = Vec::new();
        while picked.len() < select {
            let value = |i: usize| {
                let similarity = |p: &(usize, f32)| match (vectors.get(&candidates[p.0].0), vectors.get(&candidates[i].0)) {
                    (Some(a), Some(b)) => crate::vectors::cosine(a, b),
                    _ => 0.0,
                };
                let redundancy = picked.iter().map(similarity).fold(0.0f32, f32::max);
                lambda * candidates[i].1 / scale - (1.0 - lambda) * redundancy
            };
            let next = (0..candidates.len())
                .filter(|i| picked.iter().all(|p| p.0 != *i))
                .map(|i| (i, value(i)))
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            let Some(next) = next else { break };
            picked.push(next);
        }
        picked.into_iter().map(|(i, value)| (candidates[i].0, value)).collect()
    }

    /// The fast MMR against the textbook one on generated candidates: ties,
    /// negative and zero scores, zero and missing vectors, duplicates, and
    /// more picks asked for than there are candidates.
    #[test]
    fn mmr_picks_as_the_textbook_mmr_does_on_generated_candidates() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for case in 0..500 {
            let count = next(30) as usize;
            let dim = 1 + next(6) as usize;
            let candidates: Vec<(u64, f32)> = (0..count).map(|i| (i as u64, next(5) as f32 / 4.0 - if case % 3 == 0 { 0.5 } else { 0.0 })).collect();
            let mut vectors: HashMap<u64, Vec<f32>> = HashMap::new();
            for &(id, _) in &candidates {
                match next(6) {
                    0 => {}
                    1 => drop(vectors.insert(id, vec![0.0; dim])),
                    2 if id > 0 => drop(vectors.insert(id, vectors.get(&(id - 1)).cloned().unwrap_or_else(|| vec![1.0; dim]))),
                    _ => drop(vectors.insert(id, (0..dim).map(|_| next(9) as f32 - 4.0).collect())),
                }
            }
            let lambda = [0.0, 0.3, 0.5, 0.7, 1.0][next(5) as usize];
            let select = next(count as u64 + 3) as usize;
            assert_eq!(mmr(&candidates, &vectors, lambda, select), textbook_mmr(&candidates, &vectors, lambda, select), "case {case}");
        }
    }

    #[test]
    fn mmr_skips_near_duplicates() {
        let vectors: HashMap<u64, Vec<f32>> = [(1, vec![1.0, 0.0]), (2, vec![0.99, 0.14]), (3, vec![0.0, 1.0])].into_iter().collect();
        let candidates = [(1, 1.0), (2, 0.95), (3, 0.6)];
        assert_eq!(ids(&mmr(&candidates, &vectors, 0.5, 2)), [1, 3]);
        assert_eq!(ids(&mmr(&candidates, &vectors, 1.0, 2)), [1, 2], "λ = 1 is plain relevance");
    }
}
