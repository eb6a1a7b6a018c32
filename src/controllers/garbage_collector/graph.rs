//! What a pass sees: the kinds discovery lists and a snapshot of every object's metadata,
//! listed page by page, with each owner's dependents.

use super::*;

/// One kind the collector watches, as discovery lists it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Kind {
    pub(super) group: String,
    pub(super) version: String,
    pub(super) kind: String,
    pub(super) plural: String,
    pub(super) namespaced: bool,
}

/// Resources whose objects the collector leaves alone, as upstream's default
/// (`garbagecollector.DefaultIgnoredResources`): events, in both of their groups.
pub(super) const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// The kinds the collector handles: every served resource that can be listed, watched and
/// deleted (upstream's GetDeletableResources over the preferred versions), built-in or not.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Kinds(pub(super) Vec<Arc<Kind>>);

impl Kinds {
    /// Asks the API server's aggregated discovery: two requests, where the legacy documents
    /// take one per group (thousands with as many CRD groups, every resync).
    pub(super) async fn discover(client: &Client) -> Result<Kinds, Error> {
        let discovery = Discovery::new(client.clone())
            .run_aggregated()
            .await
            .map_err(Error::Discovery)?;
        let mut kinds = Vec::new();
        for group in discovery.groups() {
            for (ar, caps) in group.recommended_resources() {
                let deletable = [verbs::LIST, verbs::WATCH, verbs::DELETE]
                    .iter()
                    .all(|v| caps.supports_operation(v));
                if !deletable || IGNORED.contains(&(ar.group.as_str(), ar.plural.as_str())) {
                    continue;
                }
                kinds.push(Arc::new(Kind {
                    group: ar.group,
                    version: ar.version,
                    kind: ar.kind,
                    plural: ar.plural,
                    namespaced: caps.scope == Scope::Namespaced,
                }));
            }
        }
        // kube's Discovery keeps groups in a hash map: without a fixed order, every resync
        // would see "other" kinds and set every watch up again.
        kinds.sort_by(|a, b| {
            (&a.group, &a.version, &a.plural).cmp(&(&b.group, &b.version, &b.plural))
        });
        Ok(Kinds(kinds))
    }

    /// The kind an ownerReference's apiVersion + kind names (any version of the group).
    pub(super) fn find(&self, api_version: &str, kind: &str) -> Option<&Arc<Kind>> {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        self.0.iter().find(|k| k.group == group && k.kind == kind)
    }
}

/// Identifies one of a pass's kinds (they are shared, one `Arc` each).
pub(super) fn kind_key(kind: &Arc<Kind>) -> usize {
    Arc::as_ptr(kind) as usize
}

pub(super) fn api_resource(k: &Kind) -> ApiResource {
    ApiResource {
        group: k.group.clone(),
        version: k.version.clone(),
        api_version: if k.group.is_empty() {
            k.version.clone()
        } else {
            format!("{}/{}", k.group, k.version)
        },
        kind: k.kind.clone(),
        plural: k.plural.clone(),
    }
}

pub(super) fn api(client: &Client, kind: &Kind, namespace: &str) -> Api<DynamicObject> {
    let ar = api_resource(kind);
    if kind.namespaced && !namespace.is_empty() {
        Api::namespaced_with(client.clone(), namespace, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    }
}

/// The metadata of one object as a pass sees it.
#[derive(Debug, Clone)]
pub(super) struct Obj {
    pub(super) kind: Arc<Kind>,
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: String,
    pub(super) rv: String,
    pub(super) owners: Vec<OwnerReference>,
    pub(super) finalizers: Vec<String>,
    pub(super) deleting: bool,
}

impl Obj {
    pub(super) fn new(kind: Arc<Kind>, m: ObjectMeta) -> Obj {
        Obj {
            kind,
            namespace: m.namespace.unwrap_or_default(),
            name: m.name.unwrap_or_default(),
            uid: m.uid.unwrap_or_default(),
            rv: m.resource_version.unwrap_or_default(),
            owners: m.owner_references.unwrap_or_default(),
            finalizers: m.finalizers.unwrap_or_default(),
            deleting: m.deletion_timestamp.is_some(),
        }
    }

    pub(super) fn has(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    /// An owner whose dependents must go first (deleting, with `foregroundDeletion`).
    pub(super) fn waits_for_dependents(&self) -> bool {
        self.deleting && self.has(FOREGROUND)
    }

    pub(super) fn label(&self) -> String {
        let k = &self.kind.plural;
        match self.namespace.as_str() {
            "" => format!("{k}/{}", self.name),
            ns => format!("{k}/{ns}/{}", self.name),
        }
    }
}

/// Every served object's metadata, indexed.
pub(super) struct Snapshot {
    pub(super) kinds: Arc<Kinds>,
    pub(super) objects: Vec<Obj>,
    /// ([`kind_key`], namespace, name) → index.
    pub(super) by_name: HashMap<(usize, String, String), usize>,
    /// owner uid → indexes of the objects referencing it.
    pub(super) dependents: HashMap<String, Vec<usize>>,
}

impl Snapshot {
    pub(super) fn new(kinds: Arc<Kinds>, objects: Vec<Obj>) -> Snapshot {
        let mut by_name = HashMap::new();
        let mut dependents: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, o) in objects.iter().enumerate() {
            by_name.insert((kind_key(&o.kind), o.namespace.clone(), o.name.clone()), i);
            for r in &o.owners {
                dependents.entry(r.uid.clone()).or_default().push(i);
            }
        }
        Snapshot {
            kinds,
            objects,
            by_name,
            dependents,
        }
    }

    /// The dependents of `owner`: objects referencing its uid (in its namespace when it is
    /// namespaced), each with that reference.
    pub(super) fn dependents_of(&self, owner: &Obj) -> Vec<(&Obj, &OwnerReference)> {
        let namespaced = owner.kind.namespaced;
        self.dependents
            .get(&owner.uid)
            .into_iter()
            .flatten()
            .map(|&i| &self.objects[i])
            .filter(|d| !namespaced || d.namespace == owner.namespace)
            .filter_map(|d| d.owners.iter().find(|r| r.uid == owner.uid).map(|r| (d, r)))
            .collect()
    }
}

/// What a pass failed on.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error("listing {0} failed")]
    List(String, #[source] kube::Error),
    #[error("discovery failed")]
    Discovery(#[source] kube::Error),
}

/// Objects per page of a pass's lists: a pass over many objects never makes the server
/// decode and encode them all in one response (upstream's pager uses 500 too).
pub(super) const PAGE: u32 = 500;

/// Lists the metadata of every served kind, page by page.
pub(super) async fn snapshot(client: &Client, kinds: Arc<Kinds>) -> Result<Snapshot, Error> {
    let mut objects = Vec::new();
    for k in &kinds.0 {
        let api = api(client, k, "");
        let mut params = ListParams::default().limit(PAGE);
        loop {
            let list = api
                .list_metadata(&params)
                .await
                .map_err(|e| Error::List(k.plural.clone(), e))?;
            objects.extend(
                list.items
                    .into_iter()
                    .map(|o| Obj::new(k.clone(), o.metadata)),
            );
            match list.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
    }
    Ok(Snapshot::new(kinds, objects))
}
