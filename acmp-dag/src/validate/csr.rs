//! Compressed sparse rows: the items of every task in one allocation.

/// Rows `0..n` of items, row `i` being `items[start[i]..start[i + 1]]`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Csr<T> {
    start: Vec<u32>,
    items: Vec<T>,
}

impl<T: Copy> Csr<T> {
    /// Groups `(row, item)` pairs by row, keeping their order within a row.
    pub(crate) fn from_pairs(rows: usize, pairs: &[(u32, T)]) -> Self {
        let mut start = vec![0_u32; rows + 1];
        for &(row, _) in pairs {
            if let Some(c) = start.get_mut(row as usize + 1) {
                *c += 1;
            }
        }
        for i in 1..start.len() {
            let previous = start.get(i - 1).copied().unwrap_or(0);
            if let Some(c) = start.get_mut(i) {
                *c += previous;
            }
        }
        let Some(&(_, filler)) = pairs.first() else {
            return Self {
                start,
                items: Vec::new(),
            };
        };
        let mut next: Vec<u32> = start.clone();
        let mut items: Vec<T> = vec![filler; pairs.len()];
        for &(row, item) in pairs {
            if let Some(at) = next.get_mut(row as usize) {
                if let Some(slot) = items.get_mut(*at as usize) {
                    *slot = item;
                }
                *at += 1;
            }
        }
        // Pairs naming a row out of range were counted nowhere.
        items.truncate(start.last().copied().unwrap_or(0) as usize);
        Self { start, items }
    }
}

impl<T> Csr<T> {
    /// The items of row `i` (empty for a row out of range).
    pub(crate) fn row(&self, i: u32) -> &[T] {
        let (Some(&from), Some(&to)) = (self.start.get(i as usize), self.start.get(i as usize + 1))
        else {
            return &[];
        };
        self.items.get(from as usize..to as usize).unwrap_or(&[])
    }

    /// The items of row `i`, mutable.
    pub(crate) fn row_mut(&mut self, i: u32) -> &mut [T] {
        let (Some(&from), Some(&to)) = (self.start.get(i as usize), self.start.get(i as usize + 1))
        else {
            return &mut [];
        };
        self.items
            .get_mut(from as usize..to as usize)
            .unwrap_or(&mut [])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_row_in_order() {
        let csr = Csr::from_pairs(3, &[(2, 'a'), (0, 'b'), (2, 'c'), (0, 'd')]);
        assert_eq!(csr.row(0), ['b', 'd']);
        assert_eq!(csr.row(1), [] as [char; 0]);
        assert_eq!(csr.row(2), ['a', 'c']);
        assert_eq!(csr.row(3), [] as [char; 0]);
    }
}
