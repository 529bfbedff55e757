//! `log --graph`: the lines drawn beside each commit.

use std::io::Write;

use anyhow::Result;

/// `log --graph`'s lanes: each holds the commit it expects next, top to
/// bottom; a commit is drawn as `*` in its lane, a merge opens lanes for
/// its other parents (`|\\`), and lanes that meet join (`|/`).
#[derive(Default)]
pub(crate) struct Graph {
    lanes: Vec<dmv_repo::store::ObjectId>,
}

impl Graph {
    pub(crate) fn draw(
        &mut self,
        out: &mut impl Write,
        id: dmv_repo::store::ObjectId,
        parents: &[dmv_repo::store::ObjectId],
        text: &[u8],
    ) -> Result<()> {
        let col = match self.lanes.iter().position(|l| *l == id) {
            Some(c) => c,
            None => {
                self.lanes.push(id);
                self.lanes.len() - 1
            }
        };
        let row = |mark_at: Option<usize>, lanes: usize| {
            (0..lanes)
                .map(|i| if Some(i) == mark_at { "*" } else { "|" })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let text = String::from_utf8_lossy(text);
        let mut lines = text.lines();
        writeln!(
            out,
            "{} {}",
            row(Some(col), self.lanes.len()),
            lines.next().unwrap_or("")
        )?;
        let before = self.lanes.len();
        // Lanes that also waited for this commit end here.
        let mut ended: Vec<usize> = (0..self.lanes.len())
            .filter(|&i| i != col && self.lanes[i] == id)
            .collect();
        match parents.first() {
            Some(p) => self.lanes[col] = *p,
            None => ended.push(col),
        }
        let mut opened = 0;
        for p in parents.iter().skip(1) {
            if !self.lanes.contains(p) {
                opened += 1;
                self.lanes.insert(col + opened, *p);
            }
        }
        let rest: Vec<&str> = lines.collect();
        let lanes_now = self.lanes.len();
        for line in &rest {
            writeln!(out, "{} {line}", row(None, lanes_now.max(before)))?;
        }
        if opened > 0 {
            let mut art: Vec<String> = (0..before).map(|_| "|".to_string()).collect();
            art[col] = "|\\".to_string();
            writeln!(out, "{}", art.join(" "))?;
        }
        // A lane whose next commit another lane already waits for joins it.
        for i in (0..self.lanes.len()).rev() {
            if self.lanes[..i].contains(&self.lanes[i]) && !ended.contains(&i) {
                ended.push(i);
            }
        }
        ended.sort_unstable();
        ended.dedup();
        for &i in ended.iter().rev() {
            if i < self.lanes.len() {
                if i > 0 {
                    let art: Vec<&str> = (0..self.lanes.len())
                        .map(|j| {
                            if j + 1 == i {
                                "|/"
                            } else if j == i {
                                ""
                            } else {
                                "|"
                            }
                        })
                        .filter(|s| !s.is_empty())
                        .collect();
                    writeln!(out, "{}", art.join(" "))?;
                }
                self.lanes.remove(i);
            }
        }
        Ok(())
    }
}
