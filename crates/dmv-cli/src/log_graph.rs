//! `log --graph`: the lines drawn beside each commit, as git 2.39 draws
//! them, so that a Git user (or a script that reads git's graph) sees the
//! same picture on the same history.
//!
//! The drawer keeps a row of lanes ("columns"), each waiting for the next
//! commit it leads to. Every commit is drawn in several kinds of line, one
//! after another, each kind a [`Step`]: expansion lines that make room for
//! an octopus merge, the commit's own line, the line under a merge that
//! opens its parents' lanes, and collapsing lines that bend lanes leftwards
//! until each stands where the next commit expects it. `mapping` says, for
//! every character position of the line being drawn, which lane of the
//! next row the edge there is heading for.
//!
//! [`Graph::draw`] also places the commit's text beside those lines in the
//! order git's `log` does, since which graph line lands beside which text
//! line (and where a graph-only line is printed) is part of the picture.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;

use anyhow::Result;
use dmv_repo::store::ObjectId;

/// The commits a log shows: a lane leads only to a parent among them, as
/// git draws none to the far end of a range or to commits a filter leaves
/// out.
#[derive(Default)]
pub(crate) struct ShownCommits(HashSet<ObjectId, BuildHasherDefault<IdPrefixHasher>>);

impl ShownCommits {
    pub(crate) fn insert(&mut self, id: ObjectId) {
        self.0.insert(id);
    }

    pub(crate) fn contains(&self, id: &ObjectId) -> bool {
        self.0.contains(id)
    }
}

/// Hashes an object id by its first 8 bytes: ids are hashes already, so
/// hashing them again (as the default hasher would, for every parent of
/// every commit) only costs time.
#[derive(Default)]
pub(crate) struct IdPrefixHasher(u64);

impl Hasher for IdPrefixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8).take(1) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(word);
        }
    }

    // The length written before an id's bytes tells ids nothing apart.
    fn write_usize(&mut self, _: usize) {}
}

/// Which kind of line the graph draws next for the current commit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// The commit is done: only straight lanes until the next one.
    Padding,
    /// The previous commit was not finished: `...` marks the gap.
    Skip,
    /// Widening the lanes right of an octopus merge to make room for it.
    PreCommit,
    /// The line with the commit's `*`.
    Commit,
    /// Under a merge: the edges to its parents (`|\`, `|\ \`, `|/|`).
    PostMerge,
    /// Lanes moving left to where the next commit expects them.
    Collapsing,
}

/// git's default `log.graphColors`: the order lanes take their colours in.
const LANE_COLOURS: [&str; 12] = [
    "\x1b[31m",
    "\x1b[32m",
    "\x1b[33m",
    "\x1b[34m",
    "\x1b[35m",
    "\x1b[36m",
    "\x1b[1;31m",
    "\x1b[1;32m",
    "\x1b[1;33m",
    "\x1b[1;34m",
    "\x1b[1;35m",
    "\x1b[1;36m",
];
const RESET: &str = "\x1b[m";
/// A lane's colour when the run does not paint: one past the palette.
const UNPAINTED: usize = LANE_COLOURS.len();

/// One lane: the commit it leads to, and its colour (an index into
/// [`LANE_COLOURS`], or [`UNPAINTED`]).
#[derive(Clone, Copy)]
struct Lane {
    commit: ObjectId,
    colour: usize,
}

/// One line of graph being drawn, and how many columns it takes on screen
/// (the colour codes take none), so that every line of a commit can be
/// padded to the same width and the text beside it stays aligned.
#[derive(Default)]
struct GraphLine {
    text: String,
    width: usize,
}

impl GraphLine {
    fn push(&mut self, c: char) {
        self.text.push(c);
        self.width += 1;
    }

    fn spaces(&mut self, n: usize) {
        for _ in 0..n {
            self.push(' ');
        }
    }

    /// `c` in `lane`'s colour (colours are reset after each character, as
    /// git does, so a pager that cuts a line never leaks a colour).
    fn lane_char(&mut self, lane: &Lane, c: char) {
        match LANE_COLOURS.get(lane.colour) {
            Some(code) => {
                self.text.push_str(code);
                self.push(c);
                self.text.push_str(RESET);
            }
            None => self.push(c),
        }
    }
}

/// The characters of a merge's edges to its parents, left to right; a
/// merge whose first parent bends left starts at `/`, one whose first
/// parent goes straight down starts at `|`.
const MERGE_EDGES: [char; 3] = ['/', '|', '\\'];

/// `log --graph`'s state between commits: fed one commit at a time,
/// children before parents (the order `--topo-order` gives).
pub(crate) struct Graph {
    /// The commit being drawn and those of its parents the log shows
    /// (the others get no lane, see [`ShownCommits`]).
    commit: Option<ObjectId>,
    parents: Vec<ObjectId>,
    /// How wide every line of this commit is padded to.
    width: usize,
    /// Which widening line an octopus merge is at.
    expansion_row: usize,
    step: Step,
    /// The kind of line drawn last: how a merge's first line looks depends
    /// on what stands just above it.
    previous_step: Step,
    /// The lane of the current commit (lanes.len() when none waited for it).
    commit_index: usize,
    previous_commit_index: usize,
    /// For a merge: 0 when its first parent's lane lies left of it (the
    /// edge bends left, `|/|\`), 1 when it goes straight down (`|\`); -1
    /// while not yet chosen.
    merge_layout: i64,
    /// How many lanes this commit adds to the row (one less than its
    /// parents for a plain merge, one less again when the first parent
    /// bends left, -1 when its last edge joins the lane right beside it).
    edges_added: i64,
    previous_edges_added: i64,
    /// The lanes above the current commit, and those below it.
    lanes: Vec<Lane>,
    new_lanes: Vec<Lane>,
    /// For each character position: the lane in `new_lanes` the edge there
    /// heads for, or -1 for a blank. `previous_mapping` is the line above,
    /// kept to draw a lane that was moving left as `/` on the commit line.
    mapping: Vec<i64>,
    previous_mapping: Vec<i64>,
    mapping_size: usize,
    /// The colour the next new lane takes (git's palette cycles).
    next_colour: usize,
    painting: bool,
    /// Whether a commit was written yet, and whether the last one's text
    /// ended without a newline (git then prints no graph line before the
    /// separating newline).
    shown_one: bool,
    missing_newline: bool,
    /// Lines drawn for the current commit: a bound on them ends a commit
    /// whose lanes would somehow never settle, rather than drawing on.
    lines_drawn: usize,
}

/// What `log` prints for one commit, in the pieces git treats differently.
pub(crate) struct CommitText<'a> {
    /// The header and message (`abc123 subject` for one line per commit).
    pub message: &'a [u8],
    /// What follows the message: the changed files, stat or patch; every
    /// line gets the straight lanes before it.
    pub changes: &'a [u8],
    /// git's layouts of several lines (and `format:`) put a newline
    /// between commits; one-line layouts (and `tformat:`) end each commit
    /// with one.
    pub separated: bool,
}

impl Graph {
    /// A graph painted in git's lane colours when `painting`.
    pub(crate) fn new(painting: bool) -> Graph {
        Graph {
            commit: None,
            parents: Vec::new(),
            width: 0,
            expansion_row: 0,
            step: Step::Padding,
            previous_step: Step::Padding,
            commit_index: 0,
            previous_commit_index: 0,
            merge_layout: 0,
            edges_added: 0,
            previous_edges_added: 0,
            lanes: Vec::new(),
            new_lanes: Vec::new(),
            mapping: Vec::new(),
            previous_mapping: Vec::new(),
            mapping_size: 0,
            // The first commit steps it on to the palette's first colour.
            next_colour: LANE_COLOURS.len() - 1,
            painting,
            shown_one: false,
            missing_newline: false,
            lines_drawn: 0,
        }
    }

    /// Writes `commit` (whose parents are `parents`) with its lines of
    /// graph, the text beside them as git's `log --graph` places it.
    pub(crate) fn draw(
        &mut self,
        out: &mut impl Write,
        commit: ObjectId,
        parents: &[ObjectId],
        text: &CommitText<'_>,
    ) -> Result<()> {
        self.next_commit(commit, parents);
        let mut buf: Vec<u8> = Vec::with_capacity(text.message.len() + 64);
        // The newline between commits of a layout of several lines gets
        // the lanes before it, so that no gap opens in the graph.
        if text.separated && self.shown_one {
            if !self.missing_newline {
                buf.extend_from_slice(self.padding_line().as_bytes());
            }
            buf.push(b'\n');
        }
        self.shown_one = true;
        // Every line down to the commit's own, which the text then follows.
        loop {
            let (line, is_commit_line) = self.next_line();
            buf.extend_from_slice(line.as_bytes());
            if is_commit_line {
                break;
            }
            buf.push(b'\n');
        }
        // Each later line of the message is drawn beside the graph's next
        // line, so a merge's edges and bends run alongside its message.
        let message = text.message;
        let mut rest = message;
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n').map(|i| i + 1);
            let (line, after) = rest.split_at(end.unwrap_or(rest.len()));
            buf.extend_from_slice(line);
            if end.is_some() && !after.is_empty() {
                buf.extend_from_slice(self.next_line().0.as_bytes());
            }
            rest = after;
        }
        let newline_terminated = message.last() == Some(&b'\n');
        if !self.is_commit_finished() {
            if !newline_terminated {
                buf.push(b'\n');
            }
            self.write_remainder(&mut buf);
            if newline_terminated {
                buf.push(b'\n');
            }
        }
        self.missing_newline = !newline_terminated;
        if !text.separated {
            if !self.missing_newline {
                buf.extend_from_slice(self.padding_line().as_bytes());
            }
            buf.push(b'\n');
        }
        for line in text.changes.split_inclusive(|&b| b == b'\n') {
            buf.extend_from_slice(self.padding_line().as_bytes());
            buf.extend_from_slice(line);
        }
        out.write_all(&buf)?;
        Ok(())
    }

    /// The rest of the current commit's lines, each but the last ended
    /// with a newline.
    fn write_remainder(&mut self, buf: &mut Vec<u8>) {
        while !self.is_commit_finished() {
            buf.extend_from_slice(self.next_line().0.as_bytes());
            if !self.is_commit_finished() {
                buf.push(b'\n');
            }
        }
    }

    fn is_commit_finished(&self) -> bool {
        self.step == Step::Padding
    }

    fn set_step(&mut self, step: Step) {
        self.previous_step = self.step;
        self.step = step;
    }

    /// Takes in the next commit: works out the lanes below it and where
    /// each edge of this commit's lines heads.
    fn next_commit(&mut self, commit: ObjectId, parents: &[ObjectId]) {
        self.commit = Some(commit);
        self.parents.clear();
        self.parents.extend_from_slice(parents);
        self.previous_commit_index = self.commit_index;
        self.update_lanes(commit);
        self.expansion_row = 0;
        self.lines_drawn = 0;
        // A commit whose lines were not all drawn leaves a gap (`...`); an
        // octopus merge with lanes to its right first widens them.
        self.step = if self.step != Step::Padding {
            Step::Skip
        } else if self.needs_pre_commit_line() {
            Step::PreCommit
        } else {
            Step::Commit
        };
    }

    /// The colour a lane to `commit` takes: that of a lane already waiting
    /// for it, else the current one of the palette.
    fn colour_for(&self, commit: &ObjectId) -> usize {
        match self.lanes.iter().find(|l| l.commit == *commit) {
            Some(lane) => lane.colour,
            None if self.painting => self.next_colour,
            None => UNPAINTED,
        }
    }

    fn step_colour(&mut self) {
        self.next_colour = (self.next_colour + 1) % LANE_COLOURS.len();
    }

    /// Where in `mapping` an edge goes: written only inside it, which
    /// every position the rules below compute falls in.
    fn map(&mut self, at: i64, lane: i64) {
        if let Some(slot) = usize::try_from(at)
            .ok()
            .and_then(|a| self.mapping.get_mut(a))
        {
            *slot = lane;
        }
    }

    fn mapping_at(&self, at: i64) -> i64 {
        usize::try_from(at)
            .ok()
            .and_then(|a| self.mapping.get(a))
            .copied()
            .unwrap_or(-1)
    }

    /// Puts `commit` in the row below (once), and records where the edge
    /// from `from_lane` (the current commit's lane for its parents, None
    /// for a lane that only passes by) reaches it.
    fn place_in_new_lanes(&mut self, commit: ObjectId, from_lane: Option<usize>) {
        let lane = match self.new_lanes.iter().position(|l| l.commit == commit) {
            Some(i) => i,
            None => {
                let colour = self.colour_for(&commit);
                self.new_lanes.push(Lane { commit, colour });
                self.new_lanes.len() - 1
            }
        };
        let (lane_i, width) = (lane as i64, self.width as i64);
        let at;
        if let (true, Some(from), -1) = (self.parents.len() > 1, from_lane, self.merge_layout) {
            // A merge's first parent: if its lane is left of the merge, the
            // edge bends to it at once and the merge adds one lane fewer.
            let distance = from as i64 - lane_i;
            let shift = if distance > 1 { 2 * distance - 3 } else { 1 };
            self.merge_layout = i64::from(distance <= 0);
            self.edges_added = self.parents.len() as i64 + self.merge_layout - 2;
            at = width + (self.merge_layout - 1) * shift;
            self.width += 2 * self.merge_layout as usize;
        } else if self.edges_added > 0 && width >= 2 && lane_i == self.mapping_at(width - 2) {
            // The merge's last edge meets the lane just left of it: both
            // join at once (`|\|`) instead of a lane opened and closed.
            at = width - 2;
            self.edges_added = -1;
        } else {
            at = width;
            self.width += 2;
        }
        self.map(at, lane_i);
    }

    /// The row below the new commit, and the mapping of the lines that
    /// lead there. Each lane passes on in order; the commit's lane gives
    /// way to its parents.
    fn update_lanes(&mut self, commit: ObjectId) {
        std::mem::swap(&mut self.lanes, &mut self.new_lanes);
        self.new_lanes.clear();
        let most_lanes = self.lanes.len() + self.parents.len();
        self.mapping_size = 2 * most_lanes;
        self.mapping.clear();
        // Room for a merge's extra bend beyond the last lane.
        self.mapping.resize(self.mapping_size + 2, -1);
        self.width = 0;
        self.previous_edges_added = self.edges_added;
        self.edges_added = 0;
        let mut seen_commit = false;
        let mut commit_in_lanes = true;
        for i in 0..=self.lanes.len() {
            let lane_commit = match self.lanes.get(i) {
                Some(lane) => lane.commit,
                None if seen_commit => break,
                None => {
                    commit_in_lanes = false;
                    commit
                }
            };
            if lane_commit != commit {
                self.place_in_new_lanes(lane_commit, None);
                continue;
            }
            seen_commit = true;
            self.commit_index = i;
            self.merge_layout = -1;
            for k in 0..self.parents.len() {
                // A merge, or a new lane no child led to, moves on to the
                // palette's next colour.
                if self.parents.len() > 1 || !commit_in_lanes {
                    self.step_colour();
                }
                self.place_in_new_lanes(self.parents[k], Some(i));
            }
            // A commit without parents still takes its own place.
            if self.parents.is_empty() {
                self.width += 2;
            }
        }
        while self.mapping_size > 1 && self.mapping[self.mapping_size - 1] < 0 {
            self.mapping_size -= 1;
        }
    }

    /// The dashes of an octopus merge: one pair per parent beyond those the
    /// `|\` below can reach.
    fn dashed_parents(&self) -> usize {
        (self.parents.len() as i64 + self.merge_layout - 3).max(0) as usize
    }

    /// An octopus merge widens the lanes to its right by two lines per
    /// dashed parent before its own line.
    fn needs_pre_commit_line(&self) -> bool {
        self.parents.len() >= 3
            && self.commit_index + 1 < self.lanes.len()
            && self.expansion_row < 2 * self.dashed_parents()
    }

    /// Every lane has reached its place (or is one to the right of it,
    /// which the `/` just drawn will cover).
    fn is_mapping_correct(&self) -> bool {
        self.mapping[..self.mapping_size]
            .iter()
            .enumerate()
            .all(|(i, &target)| target < 0 || target == (i / 2) as i64)
    }

    /// The next line of the graph, padded to this commit's width, and
    /// whether it is the commit's own line.
    fn next_line(&mut self) -> (String, bool) {
        let mut line = GraphLine::default();
        if self.commit.is_none() {
            return (line.text, false);
        }
        // Lanes move left at least one place a line, an octopus widens them
        // two lines a parent: far fewer lines than this bound settle them.
        // Past it the commit's line is drawn, or its lines end.
        self.lines_drawn += 1;
        if self.lines_drawn > 4 * (self.mapping.len() + self.parents.len()) + 16 {
            self.step = match self.step {
                Step::Skip | Step::PreCommit => Step::Commit,
                Step::PostMerge | Step::Collapsing => Step::Padding,
                other => other,
            };
        }
        let is_commit_line = self.step == Step::Commit;
        match self.step {
            Step::Padding => self.padding_lanes(&mut line),
            Step::Skip => {
                line.text.push_str("...");
                line.width += 3;
                let next = match self.needs_pre_commit_line() {
                    true => Step::PreCommit,
                    false => Step::Commit,
                };
                self.set_step(next);
            }
            Step::PreCommit => self.pre_commit_line(&mut line),
            Step::Commit => self.commit_line(&mut line),
            Step::PostMerge => self.post_merge_line(&mut line),
            Step::Collapsing => self.collapsing_line(&mut line),
        }
        self.pad(&mut line);
        (line.text, is_commit_line)
    }

    fn pad(&self, line: &mut GraphLine) {
        if line.width < self.width {
            line.spaces(self.width - line.width);
        }
    }

    /// Straight lanes below the commit.
    fn padding_lanes(&self, line: &mut GraphLine) {
        for lane in &self.new_lanes {
            line.lane_char(lane, '|');
            line.push(' ');
        }
    }

    /// The lanes as they stand, before anything of this commit is drawn
    /// (beside the changes, and between commits); for a commit not yet
    /// at its own line, its next line instead.
    fn padding_line(&mut self) -> String {
        if self.step != Step::Commit {
            return self.next_line().0;
        }
        let mut line = GraphLine::default();
        let octopus = self.parents.len() > 2;
        for i in 0..self.lanes.len() {
            let lane = self.lanes[i];
            line.lane_char(&lane, '|');
            match octopus && Some(lane.commit) == self.commit {
                true => line.spaces((self.parents.len() - 2) * 2),
                false => line.push(' '),
            }
        }
        self.pad(&mut line);
        self.previous_step = Step::Padding;
        line.text
    }

    /// One widening line above an octopus merge: the lanes right of it
    /// lean out (`\`) a step further each line.
    fn pre_commit_line(&mut self, line: &mut GraphLine) {
        let mut seen_commit = false;
        for i in 0..self.lanes.len() {
            let lane = self.lanes[i];
            if Some(lane.commit) == self.commit {
                seen_commit = true;
                line.lane_char(&lane, '|');
                line.spaces(self.expansion_row);
            } else if seen_commit && self.expansion_row == 0 {
                // Lanes that already leant out under the previous merge
                // keep leaning, the others start straight.
                let leaning =
                    self.previous_step == Step::PostMerge && self.previous_commit_index < i;
                line.lane_char(&lane, if leaning { '\\' } else { '|' });
            } else if seen_commit {
                line.lane_char(&lane, '\\');
            } else {
                line.lane_char(&lane, '|');
            }
            line.push(' ');
        }
        self.expansion_row += 1;
        if !self.needs_pre_commit_line() {
            self.set_step(Step::Commit);
        }
    }

    /// The `*` and, for an octopus merge, the dashes to its far parents,
    /// each dash in the colour of the lane it leads to.
    fn commit_mark(&self, line: &mut GraphLine) {
        line.push('*');
        if self.parents.len() <= 2 {
            return;
        }
        let dashed = self.dashed_parents();
        for i in 0..dashed {
            let at = 2 * (self.commit_index + i + 2) as i64;
            let lane = usize::try_from(self.mapping_at(at))
                .ok()
                .and_then(|l| self.new_lanes.get(l))
                .copied()
                .unwrap_or(Lane {
                    commit: ObjectId([0; 32]),
                    colour: UNPAINTED,
                });
            line.lane_char(&lane, '-');
            line.lane_char(&lane, if i + 1 == dashed { '.' } else { '-' });
        }
    }

    fn commit_line(&mut self, line: &mut GraphLine) {
        let mut seen_commit = false;
        for i in 0..=self.lanes.len() {
            let lane = match self.lanes.get(i) {
                Some(lane) => *lane,
                None if seen_commit => break,
                // The commit opens a lane of its own at the right.
                None => Lane {
                    commit: self.commit.unwrap_or(ObjectId([0; 32])),
                    colour: UNPAINTED,
                },
            };
            if Some(lane.commit) == self.commit {
                seen_commit = true;
                self.commit_mark(line);
            } else if seen_commit && self.edges_added > 1 {
                line.lane_char(&lane, '\\');
            } else if seen_commit && self.edges_added == 1 {
                // Lanes right of a merge that just leant out under the
                // previous merge keep leaning, so the bend reads as one.
                let leaning = self.previous_step == Step::PostMerge
                    && self.previous_edges_added > 0
                    && self.previous_commit_index < i;
                line.lane_char(&lane, if leaning { '\\' } else { '|' });
            } else if self.previous_step == Step::Collapsing
                && self.previous_mapping.get(2 * i + 1) == Some(&(i as i64))
                && self.mapping_at(2 * i as i64) < i as i64
            {
                // A lane still moving left from the line above carries on
                // as `/` through the commit's line.
                line.lane_char(&lane, '/');
            } else {
                line.lane_char(&lane, '|');
            }
            line.push(' ');
        }
        let next = if self.parents.len() > 1 {
            Step::PostMerge
        } else if self.is_mapping_correct() {
            Step::Padding
        } else {
            Step::Collapsing
        };
        self.set_step(next);
    }

    /// Under a merge: an edge to each parent, in its lane's colour; lanes
    /// left of the merge whose first parent bends across them get `_`.
    fn post_merge_line(&mut self, line: &mut GraphLine) {
        let first_parent = self.parents.first().copied();
        let mut first_parent_lane: Option<Lane> = None;
        let mut seen_commit = false;
        for i in 0..=self.lanes.len() {
            let lane = match self.lanes.get(i) {
                Some(lane) => *lane,
                None if seen_commit => break,
                None => Lane {
                    commit: self.commit.unwrap_or(ObjectId([0; 32])),
                    colour: UNPAINTED,
                },
            };
            if Some(lane.commit) == self.commit {
                seen_commit = true;
                let mut edge = self.merge_layout.clamp(0, 2) as usize;
                let parents = self.parents.len();
                for (j, p) in self.parents.iter().enumerate() {
                    let Some(parent_lane) = self.new_lanes.iter().find(|l| l.commit == *p) else {
                        continue;
                    };
                    line.lane_char(parent_lane, MERGE_EDGES[edge]);
                    if edge == 2 {
                        if self.edges_added > 0 || j + 1 < parents {
                            line.push(' ');
                        }
                    } else {
                        edge += 1;
                    }
                }
                if self.edges_added == 0 {
                    line.push(' ');
                }
            } else if seen_commit {
                let c = if self.edges_added > 0 { '\\' } else { '|' };
                line.lane_char(&lane, c);
                line.push(' ');
            } else {
                line.lane_char(&lane, '|');
                // The lane just left of a merge whose first parent bends
                // into it has the bend (`/`) right after it, not a gap.
                if self.merge_layout != 0 || i + 1 != self.commit_index {
                    match &first_parent_lane {
                        Some(parent_lane) => line.lane_char(parent_lane, '_'),
                        None => line.push(' '),
                    }
                }
            }
            if Some(lane.commit) == first_parent {
                first_parent_lane = Some(lane);
            }
        }
        let next = match self.is_mapping_correct() {
            true => Step::Padding,
            false => Step::Collapsing,
        };
        self.set_step(next);
    }

    /// One line of lanes moving left: each lane steps one place towards
    /// its target, one lane at most crossing others with a run of `_`.
    /// Lanes never move right, so where lanes cross only one is moving.
    fn collapsing_line(&mut self, line: &mut GraphLine) {
        let size = self.mapping_size;
        std::mem::swap(&mut self.mapping, &mut self.previous_mapping);
        self.mapping.clear();
        self.mapping.resize(self.previous_mapping.len(), -1);
        let mut horizontal_edge: Option<usize> = None;
        let mut horizontal_target: i64 = -1;
        for i in 0..size {
            let target = self.previous_mapping[i];
            if target < 0 {
                continue;
            }
            let t = target as usize;
            if t * 2 >= i {
                // Already in place (a lane never lies left of its target).
                self.mapping[i] = target;
            } else if self.mapping[i - 1] < 0 {
                // Nothing to the left: step one place left.
                self.mapping[i - 1] = target;
                // The first lane to move far takes the horizontal run.
                if horizontal_edge.is_none() {
                    horizontal_edge = Some(i);
                    horizontal_target = target;
                    for j in (t * 2 + 3..i.saturating_sub(2)).step_by(2) {
                        self.mapping[j] = target;
                    }
                }
            } else if self.mapping[i - 1] == target {
                // The lane to the left heads for the same commit: the two
                // join, and that lane already draws the joint.
            } else if i >= 2 {
                // Another lane is in the way: cross it (the place beyond
                // it is always free), and take the horizontal run so no
                // other lane moves across in this line.
                self.mapping[i - 2] = target;
                if horizontal_edge.is_none() {
                    horizontal_edge = Some(i - 1);
                    horizontal_target = target;
                    for j in (t * 2 + 3..i - 2).step_by(2) {
                        self.mapping[j] = target;
                    }
                }
            }
        }
        self.previous_mapping.clear();
        self.previous_mapping.extend_from_slice(&self.mapping);
        if size > 0 && self.mapping[size - 1] < 0 {
            self.mapping_size -= 1;
        }
        let horizontal_edge = horizontal_edge.map_or(-1, |e| e as i64);
        let mut used_horizontal = false;
        for i in 0..self.mapping_size {
            let target = self.mapping[i];
            let lane = usize::try_from(target)
                .ok()
                .and_then(|t| self.new_lanes.get(t))
                .copied();
            let Some(lane) = lane else {
                line.push(' ');
                continue;
            };
            let (ii, t) = (i as i64, target);
            if t * 2 == ii {
                line.lane_char(&lane, '|');
            } else if t == horizontal_target && ii != horizontal_edge - 1 {
                // Only the run's first segment leads on to the next line.
                if ii != t * 2 + 3 {
                    self.mapping[i] = -1;
                }
                used_horizontal = true;
                line.lane_char(&lane, '_');
            } else {
                if used_horizontal && ii < horizontal_edge {
                    self.mapping[i] = -1;
                }
                line.lane_char(&lane, '/');
            }
        }
        if self.is_mapping_correct() {
            self.set_step(Step::Padding);
        }
    }
}
