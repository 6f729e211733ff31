// Package analysis judges a rollout by its metrics: the checks a workload names with
// kroll.dev/analysis, read from a ConfigMap, and the pure decision of where each
// check, and the analysis as a whole, stands after the measurements taken so far.
// The decisions (Decide, Step) ask nothing and wait for nothing; Runner.Run asks
// Prometheus the queries Step finds due, through a Querier (promclient.Client: the
// HTTP API's instant query), and a controller requeues for the next.
//
// # The ConfigMap
//
// The workload's annotation names a ConfigMap in its namespace; several workloads
// may share one. Its key analysis.yaml holds:
//
//	args:                       # defaults of the user arguments, for every check
//	  window: 30s
//	checks:
//	- name: error-ratio         # required, unique; every message names it
//	  query: |                  # PromQL; {{namespace}} {{workload}} {{revision}}
//	    sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{pod-template-hash}}-.*",code=~"5.."}[{{args.window}}]))
//	    / sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{pod-template-hash}}-.*"}[{{args.window}}]))
//	  successCondition: "< 0.01"   # a threshold, a range (">= 0 && < 0.01") or an
//	                               # expression over result ("result < 0.1 || result > 10")
//	  failureCondition: ">= 0.05"  # optional: between the two is Inconclusive
//	  interval: 10s             # between measurements
//	  count: 3                  # or duration: 30s (count = duration/interval, rounded up)
//	  initialDelay: 30s         # before the first measurement
//	  failureLimit: 0           # failed measurements tolerated (default 0)
//	  inconclusiveLimit: 0      # inconclusive ones tolerated (default 0)
//	  consecutiveErrorLimit: 4  # measurements in a row Prometheus did not answer (default 4)
//	  empty: "0"                # a result with no series: Inconclusive (default),
//	                            # Failed, Successful, Error, or a number judged instead
//	  nan: Inconclusive         # a NaN value: the same choices
//	  args: {quantile: "0.99"}  # this check's defaults, over the shared ones
//
// {{revision}} and {{pod-template-hash}} are the revision rolled out: a
// Deployment's new ReplicaSet's pod-template-hash (its pods' label, as above); for
// a StatefulSet both are its update revision's name, the value of its pods'
// controller-revision-hash label (controller_revision_hash="{{revision}}" where the
// scrape keeps pod labels); for a DaemonSet {{revision}} is its ControllerRevision's
// name (logs-5d8c7f9b6c) and {{pod-template-hash}} its pods' controller-revision-hash
// (5d8c7f9b6c). The workload's
// kroll.dev/analysis-args ("window=1m, service=web") give arguments over the
// ConfigMap's. A result of several series is judged series by series and
// the worst decides (one pod's failing series fails the measurement). The simulated
// pods of kroll up have no 5xx series while they serve no errors, as client_golang's
// handlers have none: a ratio query is then empty, hence `empty: "0"` above (or
// `or vector(0)` in the query).
//
// Parse reports every problem as one line naming the check ("check "error-ratio":
// count 3 needs an interval between its measurements"); a spec with problems is not
// used, and the workload behaves as without analysis: a broken analysis never
// promotes by itself. Render reports a placeholder without a value the same way.
//
// # The decision
//
// Check.Decide follows Argo Rollouts' AnalysisRun semantics as their users know
// them: Failed once failed measurements exceed failureLimit, Inconclusive once
// inconclusive ones exceed inconclusiveLimit, Error once more than
// consecutiveErrorLimit measurements in a row could not be taken, Successful after
// count measurements; Overall lets the worst check decide (Failed, Error,
// Inconclusive, Running, Successful). A rollout maps them to: Successful → the staged
// rollout advances past its `analyze` step (kroll.dev/rollout-steps, pkg/staging);
// Failed → kroll.dev/on-failure's action (Rollback or Pause); Inconclusive and Error
// ("Prometheus unreachable") → paused with a condition saying why.
// Two kroll choices differ: a measurement Prometheus did not answer does not count
// towards count, so a flaky Prometheus cannot shorten a check; and Error holds a
// check rather than ends it: it is asked again each interval (after an error, 10s
// at least, as Argo waits), and the first answer resumes it with its counts as they
// stood, so a rollout paused because Prometheus went away resumes when it returns.
//
// # Where an analysis stands, and when it runs
//
// No goroutine or timer per check: a controller's sync calls Runner.Run (Step,
// the queries due, Record, Step again) and requeues after the plan's Status.Next.
// Step(spec, vars, target, state, now) is the pure part: it starts afresh when the
// state is of another target (revision and analyze step) or of other checks or
// arguments (a hash of them: past measurements were judged by the old conditions),
// then gives the queries due now, the time of the next, or the verdict. A check
// decided Failed decides the analysis at once; the others are not asked further.
//
// The state lives on the workload, in kroll.dev/analysis-status, as JSON that
// keeps each check's Tally (the counts Decide needs, in place of the measurements),
// and for the views (rolloutview's Analysis: kroll rollout status, kroll status -o
// json), which read no ConfigMap, its query as asked, its conditions and count, and
// its last 3 measurements; errors are cut to 160 bytes and the query to 1 KB, so a
// check takes at most about 2 KB, and 300 bytes and its query while all is well:
//
//	{"revision":"6d5f7c9b8","step":1,"spec":"f2ef9dc25cd99618","started":"2026-12-07T16:00:00Z",
//	 "checks":[{"name":"error-ratio","query":"sum(rate(...))","successCondition":"< 0.01","count":3,
//	   "successful":2,"taken":2,"last":"2026-12-07T16:00:40Z",
//	   "recent":[{"at":"2026-12-07T16:00:30Z","value":"0.002","outcome":"Successful"},
//	             {"at":"2026-12-07T16:00:40Z","value":"0.004","outcome":"Successful"}]}]}
//
// An analysis whose checks cannot be read (no ConfigMap, checks that do not parse)
// is kept there too, as its problem alone (Unjudged).
//
// An annotation rather than a condition's message: it is structured (the views
// read values, not prose), and a workload's status belongs to its kind's own
// conditions, which the verdict's condition and event still get in one line. A
// value that does not read starts the analysis afresh: it only takes longer.
//
// A query Prometheus refuses (bad_data: it does not parse, a range vector where a
// number is wanted) is the check's problem, kept in the state's "problem" and not
// asked again until the checks or the revision change; the workload then holds as
// without analysis. Every other failure to answer (unreachable, a timeout, HTTP
// 5xx, an execution error) is a measurement not taken, towards
// consecutiveErrorLimit.
//
// # Which Prometheus answers
//
// On `kroll up --prometheus`, a real Prometheus embedded in kroll (package
// prometheus: the github.com/prometheus/prometheus module's Kubernetes service
// discovery, scrape manager, TSDB, PromQL engine and HTTP API; why embedded, and what
// it costs, is in that package's doc), which finds the pods annotated
// prometheus.io/scrape through kubernetes_sd_configs and reaches the simulated pods
// through the simulated nodes. `kroll controller-manager --prometheus-url` speaks the
// same HTTP API to a user's own Prometheus: one client (promclient) for both.
package analysis
