use super::*;

#[test]
fn consistent_constraints_move_the_least() {
    // 0 is the reference; 1 receives 5 µs too early from 0; 2 sends to
    // 0 a message received 3 µs too early; 3 has no constraint.
    let c = [(0, 1, 5000), (2, 0, 3000), (1, 0, -20_000), (0, 2, -20_000)];
    let x = solve(4, 0, &c).unwrap();
    assert_eq!(x, vec![0, 5000, -3000, 0]);
    // Everything satisfied.
    for &(a, b, w) in &c {
        assert!(x[b] - x[a] >= w);
    }
}

#[test]
fn domains_not_tied_to_the_reference_move_the_least_between_themselves() {
    // 2 must be 700 ns after 1; neither is tied to 0.
    let x = solve(3, 0, &[(1, 2, 700)]).unwrap();
    assert_eq!(x, vec![0, 0, 700]);
    // A chain: 0 → 1 → 2 each pushing forward.
    let x = solve(3, 0, &[(0, 1, 100), (1, 2, 100)]).unwrap();
    assert_eq!(x, vec![0, 100, 200]);
    // A negative ring (messages around a ring of hosts, in order) moves
    // nothing.
    let x = solve(3, 0, &[(0, 1, -100), (1, 2, -100), (2, 0, -100)]).unwrap();
    assert_eq!(x, vec![0, 0, 0]);
}

#[test]
fn a_reference_that_must_move_moves_the_others_instead() {
    // 0 receives from 1 2 µs too early: 1 moves back.
    let x = solve(2, 0, &[(1, 0, 2000)]).unwrap();
    assert_eq!(x, vec![0, -2000]);
    // Bounded on both sides: 1 must be within [300, 500] of 0.
    let x = solve(2, 0, &[(0, 1, 300), (1, 0, -500)]).unwrap();
    assert_eq!(x, vec![0, 300]);
    let x = solve(2, 1, &[(0, 1, 300), (1, 0, -500)]).unwrap();
    assert_eq!(x, vec![-300, 0]);
}

#[test]
fn an_inconsistent_cycle_has_no_solution() {
    // 1 ahead of 0 by 5 µs and behind it by 2 µs at once.
    assert_eq!(solve(2, 0, &[(0, 1, 5000), (1, 0, -2000)]), None);
    // Around three hosts.
    assert_eq!(solve(3, 0, &[(0, 1, 10), (1, 2, 10), (2, 0, -15)]), None);
    // A receive before its send on one host.
    assert_eq!(solve(2, 0, &[(1, 1, 1)]), None);
    // A cycle of weight 0 is consistent (exactly tight).
    assert_eq!(solve(2, 0, &[(0, 1, 5000), (1, 0, -5000)]), Some(vec![0, 5000]));
}

#[test]
fn the_replay_moves_receives_after_their_sends_and_what_follows_them() {
    let msg = |t, send| Msg { t, loc: 0, send, key: (0, 0, (0, 0), 0) };
    // Process 0 sends at 100 and receives at 101; process 1 (another
    // host) receives process 0's message at 90, 10 ns too early, and
    // replies at 95.
    let all = vec![
        Messages { msgs: vec![msg(100, true), msg(101, false)], locs: vec![(0, 0)] },
        Messages { msgs: vec![msg(90, false), msg(95, true)], locs: vec![(0, 7)] },
    ];
    let pairs = [((0, 0), (1, 0)), ((1, 1), (0, 1))];
    let clocks = vec![ClockMap::identity(), ClockMap::identity()];
    let moved = replay(&all, &pairs, &clocks, &[0, 1]);
    // The receive to 101 (one minimum latency after its send), the
    // reply with it, and the reply's receive to 102.
    assert_eq!(moved.floors.map[&(1, 0, 7)], vec![(90, 101)]);
    assert_eq!(moved.floors.map[&(0, 0, 0)], vec![(101, 102)]);
    assert_eq!((moved.moved, moved.max_raise), (2, 11));
    // Receives that wait for each other (a pairing that cannot be):
    // the replay still ends.
    let all = vec![
        Messages { msgs: vec![msg(10, false), msg(20, true)], locs: vec![(0, 0)] },
        Messages { msgs: vec![msg(10, false), msg(20, true)], locs: vec![(0, 0)] },
    ];
    let pairs = [((0, 1), (1, 0)), ((1, 1), (0, 0))];
    let moved = replay(&all, &pairs, &clocks, &[0, 1]);
    assert!(moved.moved <= 1);
}

#[test]
fn raise_applies_floors_in_order() {
    let mut r = Raise::new(vec![(10, 20), (30, 35)]);
    assert_eq!([5, 10, 15, 25, 30, 33, 40].map(|t| r.at(t)), [5, 20, 20, 25, 35, 35, 40]);
    let f = Floors { map: HashMap::from([((0, 0, 0), vec![(10, 50)]), ((0, 1, 0), vec![(20, 30)])]) };
    assert_eq!(f.of(0, &[(0, 0), (1, 0)]), vec![(10, 50), (20, 50)]);
}

#[test]
fn local_at_least_inverts_a_map() {
    let m = ClockMap { points: vec![(1_000_000, 100, 0.0), (2_000_000, 300, 0.0)] };
    for target in [1_000_500u64, 1_500_000, 1_999_999] {
        let u = local_at_least(&m, target, 1_000_000);
        assert!(m.global(u) >= target && m.global(u - 1) < target, "{target} → {u}");
    }
}
