//! Difference constraints `δ[b] − δ[a] ≥ w` solved by longest paths: the
//! per-host constants of the correction (see the module above).

use std::collections::VecDeque;

/// Shifts `δ` per node (`n` of them), `δ[reference] = 0`, such that
/// `δ[b] − δ[a] ≥ w` for every `(a, b, w)`, each as close to 0 as the
/// constraints with the reference allow and then the least: `None` when
/// no shifts satisfy them all (a cycle of positive weight).
pub fn solve(n: usize, reference: usize, constraints: &[(usize, usize, i64)]) -> Option<Vec<i64>> {
    let mut out: Vec<Vec<(usize, i64)>> = vec![Vec::new(); n];
    let mut back: Vec<Vec<(usize, i64)>> = vec![Vec::new(); n];
    for &(a, b, w) in constraints {
        out[a].push((b, w));
        back[b].push((a, w));
    }
    // Any positive cycle makes every start fail.
    longest(&out, vec![Some(0); n])?;
    let mut from = vec![None; n];
    from[reference] = Some(0);
    // The least each domain must be shifted (longest paths from the
    // reference), and the most it may be (minus those to it).
    let lower = longest(&out, from.clone())?;
    let upper = longest(&back, from)?;
    let start: Vec<Option<i64>> = (0..n)
        .map(|d| {
            let mut x = 0i64;
            if let Some(l) = lower[d] {
                x = x.max(l);
            }
            if let Some(u) = upper[d] {
                x = x.min(-u);
            }
            Some(x)
        })
        .collect();
    let x = longest(&out, start)?;
    let x: Vec<i64> = x.into_iter().map(|v| v.unwrap_or(0)).collect();
    (x[reference] == 0).then_some(x)
}

/// Longest paths over `edges` from the starting values (`None`: not
/// reached), by relaxing a work list; `None` when a node keeps rising (a
/// positive cycle).
fn longest(edges: &[Vec<(usize, i64)>], mut x: Vec<Option<i64>>) -> Option<Vec<Option<i64>>> {
    let n = edges.len();
    let mut queue: VecDeque<usize> = (0..n).filter(|&d| x[d].is_some()).collect();
    let mut queued = vec![false; n];
    for &d in &queue {
        queued[d] = true;
    }
    let mut raised = vec![0usize; n];
    while let Some(a) = queue.pop_front() {
        queued[a] = false;
        let Some(xa) = x[a] else { continue };
        for &(b, w) in &edges[a] {
            let v = xa.saturating_add(w);
            if x[b].is_none_or(|xb| v > xb) {
                x[b] = Some(v);
                raised[b] += 1;
                if raised[b] > n {
                    return None;
                }
                if !queued[b] {
                    queued[b] = true;
                    queue.push_back(b);
                }
            }
        }
    }
    Some(x)
}
