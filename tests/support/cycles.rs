//! The import circles of a graph of files (each file to the files it uses), shared by the
//! module's and the client's layering checks: every circle once, starting from its
//! smallest file, that file again at its end.

use std::collections::{BTreeMap, BTreeSet};

/// Every circle of `graph`, each as its files in order, the first again last.
pub fn find<K: Ord + Clone>(graph: &BTreeMap<K, BTreeSet<K>>) -> BTreeSet<Vec<K>> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        let mut path = vec![start.clone()];
        walk(graph, &mut path, &mut found);
    }
    found
}

/// The circles that go on from `path` back to its first file, through larger files only.
fn walk<K: Ord + Clone>(
    graph: &BTreeMap<K, BTreeSet<K>>,
    path: &mut Vec<K>,
    found: &mut BTreeSet<Vec<K>>,
) {
    let Some(last) = path.last().cloned() else {
        return;
    };
    for next in graph.get(&last).into_iter().flatten() {
        if *next == path[0] {
            found.insert(path.iter().chain([next]).cloned().collect());
        } else if !path.contains(next) && *next > path[0] {
            path.push(next.clone());
            walk(graph, path, found);
            path.pop();
        }
    }
}
