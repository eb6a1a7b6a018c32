//! What a pass sees: the kinds discovery lists and a snapshot of the objects it acts on (owned,
//! or being deleted) and of the identities of the objects their owners may be, listed page by
//! page, with each owner's dependents.

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

/// An object's uid as a pass keeps it: the 128 bits of the UUID the server assigned, not a
/// string. A reference to a uid that is not a UUID cannot name an object the server made;
/// such an owner is looked up live, like one the snapshot does not show.
pub(super) type Uid = u128;

pub(super) fn uid_key(uid: &str) -> Option<Uid> {
    uuid::Uuid::try_parse(uid).ok().map(|u| u.as_u128())
}

/// What a pass knows of the cluster: the objects it acts on in full (owned, or being
/// deleted), and of every other object of the kinds their owners are only its uid and a hash
/// of its kind, namespace and name (about 40 bytes per object instead of a copy of its
/// metadata).
pub(super) struct Snapshot {
    pub(super) kinds: Arc<Kinds>,
    /// The objects that are owned or being deleted.
    pub(super) objects: Vec<Obj>,
    /// uid → hash of ([`kind_key`], namespace, name), for every listed object.
    pub(super) uids: HashMap<Uid, u64>,
    /// uid → index in `objects`.
    pub(super) by_uid: HashMap<Uid, usize>,
    /// owner uid → indexes of the objects referencing it.
    pub(super) dependents: HashMap<String, Vec<usize>>,
    coordinates: foldhash::fast::RandomState,
}

impl Snapshot {
    pub(super) fn new(kinds: Arc<Kinds>) -> Snapshot {
        Snapshot {
            kinds,
            objects: Vec::new(),
            uids: HashMap::new(),
            by_uid: HashMap::new(),
            dependents: HashMap::new(),
            coordinates: foldhash::fast::RandomState::default(),
        }
    }

    /// The hash [`Snapshot::uids`] keeps for an object of `kind` at `namespace`/`name`.
    pub(super) fn coordinates(&self, kind: &Arc<Kind>, namespace: &str, name: &str) -> u64 {
        use std::hash::BuildHasher;
        self.coordinates.hash_one((kind_key(kind), namespace, name))
    }

    /// Records one listed object: its identity always, the object itself when a pass may act
    /// on it.
    pub(super) fn add(&mut self, o: Obj) {
        let uid = uid_key(&o.uid);
        if let Some(uid) = uid {
            let at = self.coordinates(&o.kind, &o.namespace, &o.name);
            self.uids.insert(uid, at);
        }
        if o.owners.is_empty() && !o.deleting {
            return;
        }
        let i = self.objects.len();
        for r in &o.owners {
            self.dependents.entry(r.uid.clone()).or_default().push(i);
        }
        if let Some(uid) = uid {
            self.by_uid.insert(uid, i);
        }
        self.objects.push(o);
    }

    /// Records only the identity of a listed object of `kind` (one that may be an owner).
    pub(super) fn identify(&mut self, kind: &Arc<Kind>, m: ObjectMeta) {
        if let Some(uid) = m.uid.as_deref().and_then(uid_key) {
            let (namespace, name) = (m.namespace.unwrap_or_default(), m.name.unwrap_or_default());
            let at = self.coordinates(kind, &namespace, &name);
            self.uids.insert(uid, at);
        }
    }

    /// The object the reference `r` of a dependent in `namespace` names, as the snapshot
    /// shows it: `Some(None)` when it exists and the pass does not keep it (it is neither owned
    /// nor being deleted), None when the snapshot does not show it.
    pub(super) fn owner(
        &self,
        kind: &Arc<Kind>,
        namespace: &str,
        r: &OwnerReference,
    ) -> Option<Option<&Obj>> {
        let uid = uid_key(&r.uid)?;
        let at = *self.uids.get(&uid)?;
        if at != self.coordinates(kind, namespace, &r.name) {
            return None;
        }
        Some(self.by_uid.get(&uid).map(|&i| &self.objects[i]))
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

/// Lists what a pass needs, page by page, each page decoded only as far as [`MetaOnly`] goes
/// (not the managedFields of every object): first, through `collector` (which carries
/// [`CollectorEvents`]), the objects of every served kind that are owned or being deleted,
/// which the server picks out; then every object of the kinds their ownerReferences name,
/// of which the snapshot keeps only the identity. Objects nothing owns of a kind that owns
/// nothing, most of a cluster, are never sent.
pub(super) async fn snapshot(
    client: &Client,
    collector: &Client,
    kinds: Arc<Kinds>,
) -> Result<Snapshot, Error> {
    let mut snap = Snapshot::new(kinds.clone());
    for k in &kinds.0 {
        list_pages(collector, k, |o| snap.add(Obj::new(k.clone(), o))).await?;
    }
    let mut owner_kinds: Vec<&Arc<Kind>> = (snap.objects.iter())
        .flat_map(|o| &o.owners)
        .filter_map(|r| kinds.find(&r.api_version, &r.kind))
        .collect();
    owner_kinds.sort_by_key(|k| kind_key(k));
    owner_kinds.dedup_by_key(|k| kind_key(k));
    for k in owner_kinds {
        list_pages(client, k, |o| snap.identify(k, o)).await?;
    }
    Ok(snap)
}

/// Lists every object of `k` page by page, handing each one's metadata to `each`.
async fn list_pages(
    client: &Client,
    k: &Arc<Kind>,
    mut each: impl FnMut(ObjectMeta),
) -> Result<(), Error> {
    let request = kube::core::Request::new(DynamicObject::url_path(&api_resource(k), None));
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let list = match request.list_metadata(&params) {
            Ok(req) => client.request::<ObjectList<MetaOnly>>(req).await,
            Err(e) => Err(kube::Error::BuildRequest(e)),
        }
        .map_err(|e| Error::List(k.plural.clone(), e))?;
        for o in list.items {
            each(o.metadata);
        }
        match list.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(()),
        }
    }
}
