# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_kapi_global_optspecs
    string join \n v/v log-format= h/help V/version
end

function __fish_kapi_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_kapi_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_kapi_using_subcommand
    set -l cmd (__fish_kapi_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c kapi -n "__fish_kapi_needs_command" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_needs_command" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_needs_command" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "serve" -d 'Run a Kubernetes-compatible control-plane API server'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "leases" -d 'Show apiserver identity leases (who is alive) and, with --all, the other kube-system leases'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "candidates" -d 'Show LeaseCandidates joined with their Lease (who is elected, who is preferred)'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "hooks" -d 'Show the post-start hooks of an apiserver and why the failing ones fail'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "health" -d 'Show the health checks of an apiserver; --wait polls until healthy'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "top" -d 'Show request rates, latencies and in-flight requests from /metrics, refreshing like top'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "man" -d 'Write man pages (one per subcommand) into a directory'
complete -c kapi -n "__fish_kapi_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l bind-address -d 'IP address to listen on' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l secure-port -d 'HTTPS port; 0 picks a free port (the admin kubeconfig records the real one)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l advertise-address -d 'IP announced to the cluster (identity lease, serving certificate SAN)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l data-dir -d 'Directory for the embedded store, generated PKI and admin.kubeconfig' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l cert-dir -d 'Directory of the generated CA and serving certificate [default: <data-dir>/pki]' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l tls-cert-file -d 'Serving certificate (PEM, leaf first); without it kapi generates one in --cert-dir. Reloaded when it or its key changes (new connections get the new pair)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l tls-private-key-file -d 'Private key of --tls-cert-file (PEM)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l http2-max-streams-per-connection -d 'HTTP/2 concurrent streams per connection (0 = 100)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l max-requests-inflight -d 'Limit of non-mutating requests in flight; over it requests get 429' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l max-mutating-requests-inflight -d 'Limit of mutating requests in flight; over it requests get 429' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l request-timeout -d 'Timeout of non-long-running requests; also bounds draining at shutdown' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l min-request-timeout -d 'Watch requests time out at a random point in [x, 2x) unless timeoutSeconds is given' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l livez-grace-period -d 'During this time after start, unfinished post-start hooks count as healthy in /livez' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l client-ca-file -d 'CA bundle for client certificates (CN = user, O = groups), in addition to kapi\'s own client CA' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l token-auth-file -d 'Static bearer tokens, CSV lines: token,user,uid,"group1,group2"' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l anonymous-auth -d 'Let requests without credentials in as system:anonymous (health and version endpoints only)' -r -f -a "true\t''
false\t''"
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l service-account-issuer -d 'Issuer of service-account tokens (repeatable: the first one goes into new tokens, all are accepted). Default: https://<advertise address>:<port>' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l service-account-signing-key-file -d 'PEM private key (ECDSA P-256 or RSA) that signs service-account tokens. Default: a key generated on first start as <cert-dir>/sa.key, shared by replicas that share --cert-dir' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l service-account-key-file -d 'More PEM keys (public or private) service-account tokens are verified with (repeatable)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l api-audiences -d 'Audiences a token must name to reach the API (comma-separated). Default: the issuers' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l service-account-max-token-expiration -d 'Longest lifetime a TokenRequest may ask for (at least 1h). Default: no limit' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l service-account-jwks-uri -d 'The jwks_uri of the issuer\'s discovery document. Default: https://<advertise address>:<port>/openid/v1/jwks' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l requestheader-client-ca-file -d 'CA bundle of front proxies: a request whose client certificate it signed (and whose CN --requestheader-allowed-names allows) is the user named by the --requestheader-* headers. Default: a front-proxy CA generated as <cert-dir>/front-proxy-ca.crt, with the client certificate <cert-dir>/front-proxy-client.crt it signs' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l requestheader-allowed-names -d 'Client-certificate common names that may send identity headers (comma-separated; empty = any certificate the request-header CA signed). Default: front-proxy-client with the generated CA, any name with --requestheader-client-ca-file' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l requestheader-username-headers -d 'Request headers checked in order for the user name (comma-separated; the first one with a value wins)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l requestheader-uid-headers -d 'Request headers checked in order for the user\'s UID (comma-separated; kube-apiserver reads none unless told, kapi reads the one kube-aggregator sends)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l requestheader-group-headers -d 'Request headers whose every value is a group of the user (comma-separated)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l requestheader-extra-headers-prefix -d 'Header-name prefixes of the user\'s extra attributes (comma-separated): each header <prefix><key> adds its values to extra <key>, lower-cased then percent-decoded' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l proxy-client-cert-file -d 'Client certificate (PEM) kapi presents when it proxies a request to an extension API server with the caller\'s identity in X-Remote-* headers; signed by a CA in --requestheader-client-ca-file. Default: the generated <cert-dir>/front-proxy-client.crt' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l proxy-client-key-file -d 'Private key of --proxy-client-cert-file (PEM)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l authorization-mode -d 'Authorizers asked in order, comma-separated: RBAC, AlwaysAllow, AlwaysDeny. Members of system:masters are always allowed first' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l etcd-servers -d 'etcd v3 endpoints (http(s)://host:port, comma-separated); unset = embedded store' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l etcd-prefix -d 'Key prefix of every object in storage' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l etcd-cafile -d 'CA bundle to verify etcd\'s serving certificate' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l etcd-certfile -d 'Client certificate for etcd' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l etcd-keyfile -d 'Client key for etcd' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l compaction-interval -d 'How often old revisions are compacted (0 disables)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l watch-cache -d 'Serve lists and watches from an in-memory cache fed by one backend watch per resource' -r -f -a "true\t''
false\t''"
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l etcd-healthcheck-timeout -d 'Timeout of the etcd health check' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l etcd-count-metric-poll-period -d 'How often the objects of each resource are counted and the database\'s size read for the metrics apiserver_storage_objects and apiserver_storage_size_bytes (0 disables)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l feature-gates -d 'Feature gates, e.g. CoordinatedLeaderElection=true,APIServerIdentity=false' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l hostname-override -d 'Hostname used for the apiserver ID and the kubernetes.io/hostname label' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l identity-lease-duration-seconds -d 'Duration of this server\'s identity lease' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l identity-lease-renew-interval -d 'How often the identity lease is renewed' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l identity-lease-gc-period -d 'How often expired identity leases are garbage-collected' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l lease-candidate-gc-period -d 'How often expired LeaseCandidates are garbage-collected' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l coordinated-leadership-lease-duration -d 'Lease duration of the coordinated-leader-election controller\'s own election' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l coordinated-leadership-renew-deadline -d 'Renew deadline of that election' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l coordinated-leadership-retry-period -d 'Retry period of that election (also the re-election period)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l peer-advertise-ip -d 'IP peers use to reach this server; publishes a peer endpoint (UnknownVersionInteroperabilityProxy)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l peer-advertise-port -d 'Port for --peer-advertise-ip [default: the secure port]' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l peer-ca-file -d 'CA bundle (PEM) that signs the peers\' serving certificates, for the mixed-version peer proxy [default: this server\'s serving CA, which replicas share through --cert-dir]' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l runtime-config -d 'API group/versions (or resources) to turn on or off: api/all, api/ga, api/beta, api/alpha, <group>/<version> (v1 or api/v1 for core) or <group>/<version>/<resource>, each =true or =false, e.g. coordination.k8s.io/v1beta1=false. Replicas may serve different sets; with UnknownVersionInteroperabilityProxy a replica forwards requests for what it does not serve to a peer that does' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l system-namespaces-period -d 'How often the system namespaces are checked and recreated' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l debug-failing-hook -d 'Testing aid: make post-start hook NAME fail COUNT times before running (NAME=COUNT)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l shutdown-delay-duration -d 'After SIGTERM keep serving this long while /readyz fails, so load balancers drain' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l audit-policy-file -d 'Audit policy (audit.k8s.io/v1 Policy, YAML or JSON): which requests are audited at which level. Without it, nothing is audited' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l audit-log-path -d 'File the audit events are appended to, one per line; - means standard output. Without it, nothing is audited' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l audit-log-maxage -d 'Days to keep rotated audit log files, by the timestamp in their names (0 = no limit)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l audit-log-maxbackup -d 'Rotated audit log files to keep (0 = all)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l audit-log-maxsize -d 'Size in megabytes at which the audit log file is rotated to <name>-<timestamp>.<ext> (0 = 100)' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l audit-log-format -d 'Format of the audit log: json (one audit.k8s.io/v1 Event per line) or legacy (a one-line text summary per event)' -r -f -a "json\t'One audit.k8s.io/v1 Event as JSON per line'
legacy\t'A one-line text summary per event'"
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l audit-log-mode -d 'blocking: a request waits until its events are written (a failed write is counted in apiserver_audit_error_total and the event\'s summary logged to stderr); blocking-strict: as blocking, but a request whose first event cannot be written fails with 500; batch: events are queued and written in the background, and dropped (and counted) when the queue is full' -r -f -a "blocking\t'Requests wait for their events to be written'
blocking-strict\t'As blocking; a failed first write fails the request'
batch\t'Events are queued and written in the background'"
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l audit-log-batch-buffer-size -d 'Events the batch mode\'s queue holds before it drops new ones' -r
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l tracing-config-file -d 'Request tracing (apiserver.config.k8s.io TracingConfiguration, YAML or JSON: endpoint, the host:port of an OpenTelemetry collector\'s OTLP gRPC receiver, default localhost:4317; samplingRatePerMillion, default 0). Spans of the handler chain, storage and webhooks are sent there; a request with a sampled W3C traceparent from system:masters or system:monitoring is traced as part of that trace. Without it, nothing is traced' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_using_subcommand serve" -l disable-http2-serving -d 'Serve HTTP/1.1 only (no h2 in ALPN)'
complete -c kapi -n "__fish_kapi_using_subcommand serve" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_using_subcommand serve" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l request-timeout -d 'How long to wait for each request before giving up (e.g. 5s, 1m)' -r
complete -c kapi -n "__fish_kapi_using_subcommand leases" -s o -l output -d 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name' -r -f -a "table\t'A borderless table with the essential columns'
wide\t'The table with extra columns appended'
json\t'The view as pretty-printed JSON'
yaml\t'The view as YAML'
name\t'One `kind/name` per line'"
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l color -d 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never' -r -f -a "auto\t'Colour when stdout is a terminal and NO_COLOR is not set'
always\t'Always colour'
never\t'Never colour'"
complete -c kapi -n "__fish_kapi_using_subcommand leases" -s l -l selector -d 'Label selector to filter leases (e.g. kubernetes.io/hostname=node-1)' -r
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l component -d 'Only identity leases of this component (value of label apiserver.kubernetes.io/identity)' -r
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l no-headers -d 'Leave out the header line of tables'
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l all -d 'Also list the other Leases of kube-system (leader-election locks), with a TYPE column'
complete -c kapi -n "__fish_kapi_using_subcommand leases" -s w -l watch -d 'After listing, keep watching and print a row whenever a lease changes'
complete -c kapi -n "__fish_kapi_using_subcommand leases" -l fail-on-expired -d 'Exit 1 when any listed lease is expired'
complete -c kapi -n "__fish_kapi_using_subcommand leases" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_using_subcommand leases" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_using_subcommand leases" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -l request-timeout -d 'How long to wait for each request before giving up (e.g. 5s, 1m)' -r
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -s o -l output -d 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name' -r -f -a "table\t'A borderless table with the essential columns'
wide\t'The table with extra columns appended'
json\t'The view as pretty-printed JSON'
yaml\t'The view as YAML'
name\t'One `kind/name` per line'"
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -l color -d 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never' -r -f -a "auto\t'Colour when stdout is a terminal and NO_COLOR is not set'
always\t'Always colour'
never\t'Never colour'"
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -s n -l namespace -d 'Only candidates in this namespace' -r
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -l lease -d 'Only candidates for this Lease name' -r
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -l no-headers -d 'Leave out the header line of tables'
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -s A -l all-namespaces -d 'Candidates in all namespaces (the default)'
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_using_subcommand candidates" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -l request-timeout -d 'How long to wait for each request before giving up (e.g. 5s, 1m)' -r
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -s o -l output -d 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name' -r -f -a "table\t'A borderless table with the essential columns'
wide\t'The table with extra columns appended'
json\t'The view as pretty-printed JSON'
yaml\t'The view as YAML'
name\t'One `kind/name` per line'"
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -l color -d 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never' -r -f -a "auto\t'Colour when stdout is a terminal and NO_COLOR is not set'
always\t'Always colour'
never\t'Never colour'"
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -l no-headers -d 'Leave out the header line of tables'
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -l failing -d 'Show only the hooks that are not ok'
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -l all-apiservers -d 'Reach every apiserver through the peer addresses published in identity leases'
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_using_subcommand hooks" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_using_subcommand health" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand health" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kapi -n "__fish_kapi_using_subcommand health" -l request-timeout -d 'How long to wait for each request before giving up (e.g. 5s, 1m)' -r
complete -c kapi -n "__fish_kapi_using_subcommand health" -s o -l output -d 'Output format: table, wide (more columns), json, yaml (stable documented shapes), name' -r -f -a "table\t'A borderless table with the essential columns'
wide\t'The table with extra columns appended'
json\t'The view as pretty-printed JSON'
yaml\t'The view as YAML'
name\t'One `kind/name` per line'"
complete -c kapi -n "__fish_kapi_using_subcommand health" -l color -d 'Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never' -r -f -a "auto\t'Colour when stdout is a terminal and NO_COLOR is not set'
always\t'Always colour'
never\t'Never colour'"
complete -c kapi -n "__fish_kapi_using_subcommand health" -l exclude -d 'Skip a check by its exact name (repeatable; sent as ?exclude=)' -r
complete -c kapi -n "__fish_kapi_using_subcommand health" -l timeout -d 'How long --wait polls (e.g. 60s, 2m)' -r
complete -c kapi -n "__fish_kapi_using_subcommand health" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_using_subcommand health" -l no-headers -d 'Leave out the header line of tables'
complete -c kapi -n "__fish_kapi_using_subcommand health" -l wait -d 'Poll until healthy (exit 0) or until --timeout passes (exit 1, or 3 if never reached)'
complete -c kapi -n "__fish_kapi_using_subcommand health" -s q -l quiet -d 'Print nothing; only set the exit code'
complete -c kapi -n "__fish_kapi_using_subcommand health" -l all-apiservers -d 'Reach every apiserver through the peer addresses published in identity leases'
complete -c kapi -n "__fish_kapi_using_subcommand health" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_using_subcommand health" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_using_subcommand health" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_using_subcommand top" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c kapi -n "__fish_kapi_using_subcommand top" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kapi -n "__fish_kapi_using_subcommand top" -l request-timeout -d 'How long to wait for each request before giving up (e.g. 5s, 1m)' -r
complete -c kapi -n "__fish_kapi_using_subcommand top" -s o -l output -d 'Output format: table, wide (with 4XX/S and P90), json, yaml (one document per sample)' -r -f -a "table\t'Tables, redrawn in place on a terminal'
wide\t'The tables with 4XX/S and P90 appended'
json\t'One JSON document per sample'
yaml\t'One YAML document per sample'"
complete -c kapi -n "__fish_kapi_using_subcommand top" -l color -d 'Colour error rates: auto (only on a terminal, and not when NO_COLOR is set), always, never' -r -f -a "auto\t'Colour when stdout is a terminal and NO_COLOR is not set'
always\t'Always colour'
never\t'Never colour'"
complete -c kapi -n "__fish_kapi_using_subcommand top" -l interval -d 'Time between two reads of /metrics: the window every rate is computed over (e.g. 2s, 1m)' -r
complete -c kapi -n "__fish_kapi_using_subcommand top" -l count -d 'Stop after this many samples (default: until Ctrl-C)' -r
complete -c kapi -n "__fish_kapi_using_subcommand top" -l sort -d 'Row order: rate (requests/s), p99 (latency) or errors (5xx/s), highest first' -r -f -a "rate\t'Requests per second, highest first'
p99\t'99th percentile latency, slowest first'
errors\t'5xx per second (then 4xx per second), highest first'"
complete -c kapi -n "__fish_kapi_using_subcommand top" -l limit -d 'Show at most N rows per apiserver (default: all; on a terminal, as many as fit)' -r
complete -c kapi -n "__fish_kapi_using_subcommand top" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_using_subcommand top" -l no-headers -d 'Leave out the header lines of the tables'
complete -c kapi -n "__fish_kapi_using_subcommand top" -l once -d 'Print one sample and exit (the same as --count 1)'
complete -c kapi -n "__fish_kapi_using_subcommand top" -l all-apiservers -d 'Reach every apiserver through the peer addresses published in identity leases'
complete -c kapi -n "__fish_kapi_using_subcommand top" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_using_subcommand top" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_using_subcommand top" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_using_subcommand completions" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_using_subcommand completions" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_using_subcommand completions" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_using_subcommand man" -l log-format -d 'Log line format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c kapi -n "__fish_kapi_using_subcommand man" -s v -l v -d 'Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver)'
complete -c kapi -n "__fish_kapi_using_subcommand man" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kapi -n "__fish_kapi_using_subcommand man" -s V -l version -d 'Print version'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "serve" -d 'Run a Kubernetes-compatible control-plane API server'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "leases" -d 'Show apiserver identity leases (who is alive) and, with --all, the other kube-system leases'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "candidates" -d 'Show LeaseCandidates joined with their Lease (who is elected, who is preferred)'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "hooks" -d 'Show the post-start hooks of an apiserver and why the failing ones fail'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "health" -d 'Show the health checks of an apiserver; --wait polls until healthy'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "top" -d 'Show request rates, latencies and in-flight requests from /metrics, refreshing like top'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "completions" -d 'Print a shell completion script'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "man" -d 'Write man pages (one per subcommand) into a directory'
complete -c kapi -n "__fish_kapi_using_subcommand help; and not __fish_seen_subcommand_from serve leases candidates hooks health top completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
