//! Reading gputrace's run summary for the stopped jobs: the words about
//! each rank, whether they name how it ended (a signal, killed, exited)
//! and count the events cut from its stream; checked per run.

use super::{Mpi, Run, Stop};

/// The summary's words about `rank`: for every "rank R" in the summary
/// above its "archive:" line, the parenthesis after it (or, without one,
/// the rest of the line up to the next rank).
fn words_about(summary: &str, rank: u32) -> Vec<String> {
    let needle = format!("rank {rank}");
    let mut found = Vec::new();
    for line in summary.lines() {
        let mut rest = line;
        while let Some(at) = rest.find(&needle) {
            let after = &rest[at + needle.len()..];
            rest = after;
            if after.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            // The rest of the line up to the next rank: "rank 1 (pid 42
            // on vm) ended by SIGTERM, ...".
            let words = after.trim_start_matches([' ', ':']).split("rank ").next().unwrap_or("");
            found.push(words.trim().to_string());
        }
    }
    found
}

/// How the summary says `rank` ended: the first of its words about the
/// rank that names a cause, else the first of them.
fn ending_of(summary: &str, rank: u32) -> Option<String> {
    let all = words_about(summary, rank);
    all.iter().find(|w| names_a_cause(w)).or(all.first()).cloned()
}

/// A signal's name (SIGTERM), "killed" or "exited": how a rank ended.
fn names_a_cause(words: &str) -> bool {
    let signal = words.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        w.len() > 3 && w.starts_with("SIG") && w[3..].chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    });
    signal || has_word(words, &["killed", "exited"])
}

fn has_word(text: &str, words: &[&str]) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| words.contains(&w))
}

/// Events cut from a stream are counted: a number, then "event(s)" within
/// two words ("3 events cut", "1 torn event").
fn counts_cut_events(words: &str) -> bool {
    if !has_word(words, &["cut", "torn"]) {
        return true;
    }
    let tokens: Vec<&str> = words.split_whitespace().collect();
    tokens.iter().enumerate().any(|(i, t)| {
        let number = t.trim_matches(|c: char| !c.is_ascii_digit());
        !number.is_empty()
            && number.chars().all(|c| c.is_ascii_digit() || c == ',')
            && tokens[i + 1..].iter().take(2).any(|w| w.starts_with("event"))
    })
}

/// The summary names how each rank ended, and counts cut events.
pub(super) fn check_endings(stderr: &str, stop: Stop, mpi: Mpi, run: &mut Run) {
    let summary: String = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("[gputrace] "))
        .take_while(|l| !l.starts_with("archive:"))
        .collect::<Vec<_>>()
        .join("\n");
    for rank in 0..2u32 {
        let Some(words) = ending_of(&summary, rank) else {
            run.failures.push(format!("the summary does not say how rank {rank} ended"));
            run.endings.push(String::new());
            continue;
        };
        if !names_a_cause(&words) {
            run.failures.push(format!("the summary does not name how rank {rank} ended: \"{words}\""));
        }
        if !counts_cut_events(&words) {
            run.failures.push(format!("rank {rank}'s cut events are not counted: \"{words}\""));
        }
        // Where the end is certain, the right one.
        let expected: &[&str] = match (stop, rank) {
            (Stop::Rank("crash"), 1) => &["SIGSEGV"],
            (Stop::Rank("kill"), 1) => &["SIGKILL", "killed"],
            (Stop::Rank("crash"), 0) if mpi == Mpi::Mpich => &["SIGKILL", "killed"],
            _ => &[],
        };
        if !expected.is_empty() && !expected.iter().any(|e| words.contains(e)) {
            run.failures.push(format!("rank {rank} ended by {expected:?}, the summary says \"{words}\""));
        }
        run.endings.push(words);
    }
    for line in summary.lines() {
        if !counts_cut_events(line) {
            run.failures.push(format!("cut events are not counted: \"{line}\""));
        }
    }
}

#[test]
fn the_summary_reads_how_a_rank_ended() {
    let summary = "ending: rank 0 (pid 1 on vm) ended by SIGTERM\nending: rank 1 (pid 2 on vm) \
                   stopped without closing its trace (SIGKILL, or _exit); 1 event being written cut";
    assert_eq!(ending_of(summary, 0).as_deref(), Some("(pid 1 on vm) ended by SIGTERM"));
    assert!(ending_of(summary, 1).is_some_and(|w| w.contains("SIGKILL") && counts_cut_events(&w)));
    assert!(names_a_cause("pid 1 on vm, SIGTERM") && !names_a_cause("pid 2 on vm"));
    assert!(names_a_cause("pid 2 on vm, killed; 1 torn event dropped"));
    assert_eq!(ending_of("rank 10: exited with 3", 1), None);
    assert_eq!(ending_of("rank 1: killed, 12 events cut\nnext", 1).as_deref(), Some("killed, 12 events cut"));
    assert_eq!(
        ending_of("ending: rank 1 (pid 4 on vm) ended by SIGTERM, its buffers written first", 1).as_deref(),
        Some("(pid 4 on vm) ended by SIGTERM, its buffers written first")
    );
    assert!(counts_cut_events("killed, 12 events cut") && counts_cut_events("SIGTERM"));
    assert!(!counts_cut_events("killed, events cut"));
    assert!(counts_cut_events("after the program's execution"));
    let two = "clock: rank 1 (offset 3 us)\nending: rank 1 (pid 2 on vm) stopped (SIGKILL)";
    assert_eq!(ending_of(two, 1).as_deref(), Some("(pid 2 on vm) stopped (SIGKILL)"));
    assert!(counts_cut_events("killed; 1,024 torn events"));
}
