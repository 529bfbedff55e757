//! `bisect`: finding the commit that brought a change in by halving the
//! commits between a bad one and good ones, as git does. The rules live
//! here: which commit to test next (git's: the candidate whose ancestors
//! among the candidates are nearest half of them), the state kept in
//! `.dmv/BISECT_STATE` (written whole, so a kill leaves the old state or
//! the new one, and `bisect reset` mends either), and each step's checkout.

use std::collections::{HashMap, HashSet};

use dmv_store::{ObjectId, Progress};

use crate::atomic::write_cache;
use crate::error::{IoContext, RepoError, RepoResult};
use crate::history::graph::CommitInfo;
use crate::repository::refs::Head;
use crate::repository::repo::Repository;

const STATE_FILE: &str = "BISECT_STATE";
const MAGIC: &str = "dmv-bisect 1";
/// Candidates one step weighs at most (each merge among them is a walk of
/// them): past it, bisect refuses and asks for a nearer good commit.
pub const MAX_BISECT_CANDIDATES: usize = 1_000_000;

/// What `bisect good|bad|skip` says of a commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The commit has the old behaviour.
    Good,
    /// The commit has the new behaviour.
    Bad,
    /// The commit cannot be tested.
    Skip,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Good => "good",
            Verdict::Bad => "bad",
            Verdict::Skip => "skip",
        }
    }
}

/// A bisection in progress, as `.dmv/BISECT_STATE` keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BisectState {
    /// Where HEAD was when it started: `bisect reset` goes back there.
    pub start: Head,
    /// The bad commit (the newest one marked bad).
    pub bad: Option<ObjectId>,
    /// The commits marked good.
    pub good: Vec<ObjectId>,
    /// The commits marked as impossible to test.
    pub skip: Vec<ObjectId>,
    /// What was said, in order, as `bisect log` prints it.
    pub log: Vec<String>,
}

/// Where a bisection stands after a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BisectStep {
    /// Not both a bad and a good commit yet: nothing was checked out.
    Waiting {
        /// Whether the bad commit is known.
        bad: bool,
        /// How many good commits are known.
        good: usize,
    },
    /// `commit` is checked out to be tested.
    Testing {
        /// The commit checked out.
        commit: ObjectId,
        /// Candidates left after this one, as git counts them.
        left: usize,
        /// Roughly how many steps remain (git's estimate).
        steps: usize,
    },
    /// The first bad commit.
    Found(ObjectId),
    /// Only skipped commits are left: the first bad one is among these.
    OnlySkipped(Vec<ObjectId>),
}

/// `bisect` over one repository's history (see the module comment).
pub struct Bisect<'r> {
    repo: &'r Repository,
}

impl<'r> Bisect<'r> {
    /// The bisection of `repo`'s history.
    pub fn new(repo: &'r Repository) -> Bisect<'r> {
        Bisect { repo }
    }

    fn path(&self) -> std::path::PathBuf {
        self.repo.dmv.join(STATE_FILE)
    }

    /// The bisection in progress, if any.
    pub fn state(&self) -> RepoResult<Option<BisectState>> {
        let path = self.path();
        let text = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RepoError::io(&path, e)),
        };
        parse_state(&String::from_utf8_lossy(&text))
            .map(Some)
            .ok_or_else(|| RepoError::Corrupt {
                path,
                detail: "not a bisect state (a bisect reset removes it)".into(),
            })
    }

    /// Replaces the state by a rename, without a sync: a kill leaves the
    /// old state or the new one; a crash of the machine may leave it
    /// empty, read as damaged, which `bisect reset` mends. (Two syncs a
    /// step were a fifth of `bisect run`'s time.)
    fn save(&self, state: &BisectState) -> RepoResult<()> {
        self.repo.check_worktree_locked("BISECT_STATE")?;
        let path = self.path();
        write_cache(&path, encode_state(state).as_bytes()).at(&path)
    }

    /// `bisect start [BAD [GOOD…]]`: records where HEAD is, marks `bad`
    /// and `good`, and checks out the first commit to test when both are
    /// known. Refused while another bisection is in progress; a checkout
    /// that would lose uncommitted changes refuses with nothing kept.
    pub fn start(
        &self,
        bad: Option<ObjectId>,
        good: &[ObjectId],
        words: &str,
        progress: &dyn Progress,
    ) -> RepoResult<BisectStep> {
        self.repo.require_worktree()?;
        let _wlock = self.repo.lock_worktree()?;
        if self.state()?.is_some() {
            return Err(RepoError::Bisect(
                "a bisection is in progress already (a bisect reset ends it)".into(),
            ));
        }
        if let Some(m) = self.repo.merges().merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        let mut state = BisectState {
            start: self.repo.head()?,
            bad: None,
            good: Vec::new(),
            skip: Vec::new(),
            log: Vec::new(),
        };
        if let Some(b) = bad {
            self.note(&mut state, Verdict::Bad, b, false)?;
        }
        for g in good {
            self.note(&mut state, Verdict::Good, *g, false)?;
        }
        state
            .log
            .push(format!("dmv bisect start {words}").trim_end().to_string());
        let step = self.next(&state)?;
        self.note_step(&mut state, &step)?;
        self.save(&state)?;
        dmv_store::failpoint("bisect-before-checkout");
        if let Err(e) = self.check_out(&step, progress) {
            // Nothing kept: the repository is as it was.
            let _ = std::fs::remove_file(self.path());
            return Err(e);
        }
        Ok(step)
    }

    /// `bisect good|bad|skip [REV]` (`rev`: the commit, default HEAD):
    /// records the verdict and checks out the next commit to test.
    pub fn mark(
        &self,
        verdict: Verdict,
        rev: Option<ObjectId>,
        progress: &dyn Progress,
    ) -> RepoResult<BisectStep> {
        self.repo.require_worktree()?;
        let _wlock = self.repo.lock_worktree()?;
        let mut state = self.state()?.ok_or_else(not_bisecting)?;
        let commit = match rev {
            Some(c) => c,
            None => self
                .repo
                .head_commit()?
                .ok_or_else(|| RepoError::UnknownRevision("HEAD".into()))?,
        };
        self.note(&mut state, verdict, commit, true)?;
        let step = self.next(&state)?;
        self.note_step(&mut state, &step)?;
        // Saved before the checkout: a kill during it leaves the verdict
        // recorded, and the next step (or `bisect reset`) checks out again.
        self.save(&state)?;
        dmv_store::failpoint("bisect-before-checkout");
        self.check_out(&step, progress)?;
        Ok(step)
    }

    /// `bisect reset [REV]`: ends the bisection, checking out where it
    /// started (or `to`). Without a bisection, nothing to do (false).
    pub fn reset(&self, to: Option<Head>, progress: &dyn Progress) -> RepoResult<bool> {
        self.repo.require_worktree()?;
        let _wlock = self.repo.lock_worktree()?;
        let start = match self.state() {
            Ok(Some(s)) => Some(s.start),
            Ok(None) => None,
            // A damaged state must not block the way out.
            Err(RepoError::Corrupt { .. }) => None,
            Err(e) => return Err(e),
        };
        let Some(target) = to.or(start) else {
            let existed = self.path().exists();
            let _ = std::fs::remove_file(self.path());
            return Ok(existed);
        };
        self.repo.switch_to(&target, progress)?;
        match std::fs::remove_file(self.path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(RepoError::io(self.path(), e))
            }
            _ => Ok(true),
        }
    }

    /// Adds a verdict on `commit` to `state`, with its lines in the log
    /// (`command`: the command line too, as git logs all but `start`'s).
    fn note(
        &self,
        state: &mut BisectState,
        verdict: Verdict,
        commit: ObjectId,
        command: bool,
    ) -> RepoResult<()> {
        match verdict {
            Verdict::Bad => state.bad = Some(commit),
            Verdict::Good if !state.good.contains(&commit) => state.good.push(commit),
            Verdict::Skip if !state.skip.contains(&commit) => state.skip.push(commit),
            _ => {}
        }
        state.log.push(format!(
            "# {}: [{}] {}",
            verdict.word(),
            commit.to_hex(),
            self.subject(&commit)?
        ));
        if command {
            state
                .log
                .push(format!("dmv bisect {} {}", verdict.word(), commit.to_hex()));
        }
        Ok(())
    }

    fn subject(&self, commit: &ObjectId) -> RepoResult<String> {
        Ok(self
            .repo
            .commit(commit)?
            .message
            .lines()
            .next()
            .unwrap_or("")
            .to_string())
    }

    /// What the log keeps of `step`, after the verdict that led to it.
    fn note_step(&self, state: &mut BisectState, step: &BisectStep) -> RepoResult<()> {
        match step {
            BisectStep::Waiting { bad, good } => {
                state.log.push(format!("# {}", waiting_status(*bad, *good)))
            }
            BisectStep::Found(id) => state.log.push(format!(
                "# first bad commit: [{}] {}",
                id.to_hex(),
                self.subject(id)?
            )),
            BisectStep::OnlySkipped(ids) => {
                state.log.push("# only skipped commits left to test".into());
                for id in ids {
                    state.log.push(format!(
                        "# possible first bad commit: [{}] {}",
                        id.to_hex(),
                        self.subject(id)?
                    ));
                }
            }
            BisectStep::Testing { .. } => {}
        }
        Ok(())
    }

    /// Checks out what `step` tests, detached (nothing otherwise), as
    /// `switch_to` does, except that where HEAD was (for `switch -`) is
    /// kept as a hint, without a sync: the bisection's own state says
    /// where it started.
    fn check_out(&self, step: &BisectStep, progress: &dyn Progress) -> RepoResult<()> {
        let BisectStep::Testing { commit, .. } = step else {
            return Ok(());
        };
        let repo = self.repo;
        let before = repo.head()?;
        if repo.head_commit()? != Some(*commit) || repo.merges().merge_state()?.is_some() {
            repo.checkout_tree(&repo.commit(commit)?.tree, progress)?;
        }
        let head = Head::Detached(*commit);
        repo.set_head(&head)?;
        if before != head {
            let path = repo.dmv.join(crate::history::revisions::PREVIOUS_HEAD);
            let text = match before {
                Head::Branch(name) => format!("ref: {name}\n"),
                Head::Detached(id) => format!("{id}\n"),
            };
            write_cache(&path, text.as_bytes()).at(&path)?;
        }
        Ok(())
    }

    /// The next step of `state`, as git chooses it: among the commits the
    /// bad one reaches and no good one does (the candidates), the one not
    /// skipped whose ancestors among them (itself too) number nearest half
    /// of them (see `choose`).
    pub fn next(&self, state: &BisectState) -> RepoResult<BisectStep> {
        let Some(bad) = state.bad.filter(|_| !state.good.is_empty()) else {
            return Ok(BisectStep::Waiting {
                bad: state.bad.is_some(),
                good: state.good.len(),
            });
        };
        let history = self.repo.history();
        for g in &state.good {
            if *g != bad && history.is_ancestor(&bad, g)? {
                return Err(RepoError::Bisect(format!("good commit {} is a descendant of the bad one {}: maybe good and bad were swapped", g.short(), bad.short())));
            }
        }
        let mut candidates: Vec<CommitInfo> = Vec::new();
        for c in history.walk_between(&[bad], &state.good)? {
            candidates.push(c?);
            if candidates.len() > MAX_BISECT_CANDIDATES {
                return Err(RepoError::Bisect(format!("more than {MAX_BISECT_CANDIDATES} commits lie between the good and bad ones; mark a nearer good commit")));
            }
        }
        // Oldest first, as git's find_bisection reverses its walk.
        candidates.reverse();
        if candidates.is_empty() {
            return Err(RepoError::Bisect(format!(
                "{} is marked both good and bad",
                bad.short()
            )));
        }
        let (best, weights) = choose(&candidates);
        let all = candidates.len();
        let skipped: HashSet<&ObjectId> = state.skip.iter().collect();
        let left = all - weights[best] - 1;
        // A skipped choice gives way to the untested commit nearest half (git's numbers stay).
        let chosen = match skipped.contains(&candidates[best].id) {
            false => Some(best),
            true => {
                let mut pick: Option<(usize, usize)> = None;
                for (i, c) in candidates.iter().enumerate() {
                    if skipped.contains(&c.id) {
                        continue;
                    }
                    let distance = weights[i].min(all - weights[i]);
                    if pick.is_none_or(|(_, d)| distance > d) {
                        pick = Some((i, distance));
                    }
                }
                pick.map(|(i, _)| i)
            }
        };
        let commit = chosen.map(|i| candidates[i].id);
        if commit.is_none_or(|c| c == bad) {
            let mut left: Vec<ObjectId> = candidates
                .iter()
                .map(|c| c.id)
                .filter(|id| skipped.contains(id) && *id != bad)
                .collect();
            if left.is_empty() {
                return Ok(BisectStep::Found(bad));
            }
            left.push(bad);
            return Ok(BisectStep::OnlySkipped(left));
        }
        Ok(BisectStep::Testing {
            commit: commit.unwrap_or(bad),
            left,
            steps: estimate_steps(all),
        })
    }
}

/// Git's line for a bisection still waiting for a bad or a good commit.
pub fn waiting_status(bad: bool, good: usize) -> String {
    match (bad, good) {
        (false, 0) => "status: waiting for both good and bad commits".into(),
        (true, _) => "status: waiting for good commit(s), bad commit known".into(),
        (false, 1) => "status: waiting for bad commit, 1 good commit known".into(),
        (false, n) => format!("status: waiting for bad commit, {n} good commits known"),
    }
}

fn not_bisecting() -> RepoError {
    RepoError::Bisect("no bisection in progress (a bisect start begins one)".into())
}

/// Git's choice among `candidates` (oldest first, the walk reversed)
/// and each one's weight: how many candidates it reaches, itself
/// included. As git's `find_bisection`: a commit with no parent among them
/// weighs 1, a merge is weighed by a walk of its ancestors, any other one
/// more than its parent; the first weighed (merges first, then passes
/// over the list) that is halfway (twice its weight within one of the
/// count) is taken at once; else the one whose weight is nearest half,
/// the first among equals. Weights not reached are left 0.
fn choose(candidates: &[CommitInfo]) -> (usize, Vec<usize>) {
    let nr = candidates.len();
    let index: HashMap<ObjectId, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id, i))
        .collect();
    let parents: Vec<Vec<usize>> = candidates
        .iter()
        .map(|c| {
            c.commit
                .parents
                .iter()
                .filter_map(|p| index.get(p).copied())
                .collect()
        })
        .collect();
    let halfway = |w: i64| (2 * w - nr as i64).abs() <= 1;
    let mut weight: Vec<i64> = parents
        .iter()
        .map(|ps| match ps.len() {
            0 => 1,
            1 => -1,
            _ => -2,
        })
        .collect();
    let done = |weight: Vec<i64>| weight.into_iter().map(|w| w.max(0) as usize).collect();
    let mut counted = weight.iter().filter(|w| **w == 1).count();
    for i in 0..nr {
        if weight[i] != -2 {
            continue;
        }
        let mut seen = HashSet::from([i]);
        let mut stack = parents[i].clone();
        while let Some(p) = stack.pop() {
            if seen.insert(p) {
                stack.extend(parents[p].iter().copied());
            }
        }
        weight[i] = seen.len() as i64;
        if halfway(weight[i]) {
            return (i, done(weight));
        }
        counted += 1;
    }
    while counted < nr {
        let before = counted;
        for i in 0..nr {
            if weight[i] >= 0 {
                continue;
            }
            let Some(&q) = parents[i].iter().find(|&&q| weight[q] >= 0) else {
                continue;
            };
            weight[i] = weight[q] + 1;
            counted += 1;
            if halfway(weight[i]) {
                return (i, done(weight));
            }
        }
        if counted == before {
            break;
        }
    }
    let weight: Vec<usize> = done(weight);
    let mut best = (0, None::<usize>);
    for (i, w) in weight.iter().enumerate() {
        let distance = (*w).min(nr - w);
        if best.1.is_none_or(|d| distance > d) {
            best = (i, Some(distance));
        }
    }
    (best.0, weight)
}

/// Git's estimate of the steps left among `all` candidates.
pub fn estimate_steps(all: usize) -> usize {
    if all < 3 {
        return 0;
    }
    let n = usize::BITS as usize - 1 - all.leading_zeros() as usize;
    let e = 1usize << n;
    let x = all - e;
    if e < 3 * x {
        n
    } else {
        n - 1
    }
}

fn encode_state(s: &BisectState) -> String {
    let mut text = format!("{MAGIC}\n");
    match &s.start {
        Head::Branch(b) => text.push_str(&format!("start branch {b}\n")),
        Head::Detached(id) => text.push_str(&format!("start detached {}\n", id.to_hex())),
    }
    if let Some(b) = s.bad {
        text.push_str(&format!("bad {}\n", b.to_hex()));
    }
    for g in &s.good {
        text.push_str(&format!("good {}\n", g.to_hex()));
    }
    for k in &s.skip {
        text.push_str(&format!("skip {}\n", k.to_hex()));
    }
    for l in &s.log {
        text.push_str(&format!("log {}\n", l.replace('\n', " ")));
    }
    text
}

fn parse_state(text: &str) -> Option<BisectState> {
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let id = |s: &str| ObjectId::from_hex(s);
    let mut start = None;
    let (mut bad, mut good, mut skip, mut log) = (None, Vec::new(), Vec::new(), Vec::new());
    for line in lines {
        let (key, value) = line.split_once(' ')?;
        match key {
            "start" => {
                start = Some(match value.split_once(' ')? {
                    ("branch", b) => Head::Branch(b.to_string()),
                    ("detached", h) => Head::Detached(id(h)?),
                    _ => return None,
                })
            }
            "bad" => bad = Some(id(value)?),
            "good" => good.push(id(value)?),
            "skip" => skip.push(id(value)?),
            "log" => log.push(value.to_string()),
            _ => return None,
        }
    }
    Some(BisectState {
        start: start?,
        bad,
        good,
        skip,
        log,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_estimated_as_git_does() {
        let want = [
            (1, 0),
            (2, 0),
            (3, 1),
            (4, 1),
            (7, 2),
            (8, 2),
            (10, 2),
            (11, 3),
            (16, 3),
            (100, 6),
        ];
        for (all, steps) in want {
            assert_eq!(estimate_steps(all), steps, "{all}");
        }
    }

    #[test]
    fn a_state_round_trips_and_junk_is_refused() {
        let s = BisectState {
            start: Head::Branch("refs/heads/main".into()),
            bad: Some(ObjectId::from_hex(&"01".repeat(32)).unwrap()),
            good: vec![ObjectId::from_hex(&"02".repeat(32)).unwrap()],
            skip: vec![ObjectId::from_hex(&"03".repeat(32)).unwrap()],
            log: vec!["dmv bisect start".into()],
        };
        assert_eq!(parse_state(&encode_state(&s)), Some(s));
        for junk in [
            "",
            "dmv-bisect 1\n",
            "dmv-bisect 1\nstart detached zz\n",
            "x\n",
            "dmv-bisect 1\nstart branch a\nbad\n",
        ] {
            assert_eq!(parse_state(junk), None, "{junk:?}");
        }
    }
}
