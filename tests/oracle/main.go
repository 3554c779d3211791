// Command oracle asks Kueue's own scheduler packages what they would do with one incoming
// Workload against a frozen cluster state, and prints the decision as one JSON line.
//
// Usage: oracle CASE_DIR...
//
// Each CASE_DIR holds state.yaml (Kueue's objects as stored: typed lists or single objects
// of ResourceFlavor, Cohort, ClusterQueue, LocalQueue and Workload, and Kueue's
// Configuration in ConfigMap kueue-system/kueue-manager-config) and incoming.yaml (the
// Workload to decide, kueue.x-k8s.io/v1beta2). These are the files the simulator's
// `--cluster-state` reads.
//
// The attempt is the one Kueue's scheduler makes for a queue's head (getInitialAssignments
// in pkg/scheduler/scheduler.go): a cache filled as its controllers fill it, a snapshot,
// flavor assignment with the preemption oracle, and the preemptor's targets when the
// assignment needs preemption. Partial admission and topology-aware scheduling are not
// enabled. Only exported packages of Kueue are used.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler/flavorassigner"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/workload"
)

// Decision is what the oracle prints per case.
type Decision struct {
	Case string `json:"case"`
	// admit | preempt | wait | never | misconfigured | error
	Outcome string `json:"outcome"`
	// Kueue's QuotaReserved reason for a NoFit, or why the case was not decided
	Reason  string   `json:"reason,omitempty"`
	Message string   `json:"message,omitempty"`
	PodSets []PodSet `json:"podSets,omitempty"`
	Victims []Victim `json:"victims,omitempty"`
	Mode    string   `json:"mode,omitempty"`
	Borrow  int      `json:"borrowing"`
}

// PodSet is one podSet's flavor per resource.
type PodSet struct {
	Name    string            `json:"name"`
	Flavors map[string]string `json:"flavors"`
}

// Victim is one preemption target: namespace/name and Kueue's reason.
type Victim struct {
	Workload string `json:"workload"`
	Reason   string `json:"reason"`
}

type state struct {
	flavors     []*kueue.ResourceFlavor
	cohorts     []*kueue.Cohort
	queues      []*kueue.ClusterQueue
	localQueues []*kueue.LocalQueue
	workloads   []*kueue.Workload
	fairSharing *configapi.FairSharing
}

const configKey = "controller_manager_config.yaml"

func readObjects(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []map[string]any
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		if items, ok := obj["items"].([]any); ok && strings.HasSuffix(kind, "List") {
			for _, item := range items {
				if m, ok := item.(map[string]any); ok {
					if _, has := m["kind"]; !has && kind != "List" {
						m["kind"] = strings.TrimSuffix(kind, "List")
					}
					out = append(out, m)
				}
			}
			continue
		}
		out = append(out, obj)
	}
}

func convert[T any](obj map[string]any) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

func readState(path string) (*state, error) {
	objects, err := readObjects(path)
	if err != nil {
		return nil, err
	}
	st := &state{}
	for _, obj := range objects {
		u := unstructured.Unstructured{Object: obj}
		group := u.GroupVersionKind().Group
		switch {
		case group == kueue.SchemeGroupVersion.Group && u.GetKind() == "ResourceFlavor":
			o, err := convert[kueue.ResourceFlavor](obj)
			if err != nil {
				return nil, err
			}
			st.flavors = append(st.flavors, o)
		case group == kueue.SchemeGroupVersion.Group && u.GetKind() == "Cohort":
			o, err := convert[kueue.Cohort](obj)
			if err != nil {
				return nil, err
			}
			st.cohorts = append(st.cohorts, o)
		case group == kueue.SchemeGroupVersion.Group && u.GetKind() == "ClusterQueue":
			o, err := convert[kueue.ClusterQueue](obj)
			if err != nil {
				return nil, err
			}
			st.queues = append(st.queues, o)
		case group == kueue.SchemeGroupVersion.Group && u.GetKind() == "LocalQueue":
			o, err := convert[kueue.LocalQueue](obj)
			if err != nil {
				return nil, err
			}
			st.localQueues = append(st.localQueues, o)
		case group == kueue.SchemeGroupVersion.Group && u.GetKind() == "Workload":
			o, err := convert[kueue.Workload](obj)
			if err != nil {
				return nil, err
			}
			st.workloads = append(st.workloads, o)
		case group == "" && u.GetKind() == "ConfigMap" && u.GetName() == "kueue-manager-config":
			data, _, _ := unstructured.NestedString(obj, "data", configKey)
			var cfg configapi.Configuration
			if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", configKey, err)
			}
			st.fairSharing = cfg.FairSharing
		}
	}
	return st, nil
}

func newClient(st *state) client.Client {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kueue.AddToScheme(scheme))
	objects := make([]client.Object, 0, len(st.localQueues)+len(st.workloads))
	for _, lq := range st.localQueues {
		objects = append(objects, lq)
	}
	for _, wl := range st.workloads {
		objects = append(objects, wl)
	}
	return fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&kueue.LocalQueue{}, indexer.QueueClusterQueueKey, indexer.IndexQueueClusterQueue).
		WithIndex(&kueue.Workload{}, indexer.WorkloadQueueKey, indexer.IndexWorkloadQueue).
		WithIndex(&kueue.Workload{}, indexer.WorkloadClusterQueueKey, indexer.IndexWorkloadClusterQueue).
		WithObjects(objects...).
		Build()
}

func decide(dir string) Decision {
	d := Decision{Case: dir}
	st, err := readState(filepath.Join(dir, "state.yaml"))
	if err != nil {
		return Decision{Case: dir, Outcome: "error", Message: err.Error()}
	}
	incomingObjects, err := readObjects(filepath.Join(dir, "incoming.yaml"))
	if err != nil || len(incomingObjects) != 1 {
		return Decision{Case: dir, Outcome: "error", Message: fmt.Sprintf("incoming.yaml: one Workload wanted (%v)", err)}
	}
	incoming, err := convert[kueue.Workload](incomingObjects[0])
	if err != nil {
		return Decision{Case: dir, Outcome: "error", Message: err.Error()}
	}
	ctx := ctrllog.IntoContext(context.Background(), logr.Discard())
	log := logr.Discard()
	now := time.Now()
	if stamp, ok := incoming.Annotations["oracle.tpu-admission/now"]; ok {
		if parsed, err := time.Parse(time.RFC3339, stamp); err == nil {
			now = parsed
		}
	}

	cl := newClient(st)
	cache := schdcache.New(cl, schdcache.WithFairSharing(st.fairSharing != nil))
	for _, rf := range st.flavors {
		cache.AddOrUpdateResourceFlavor(log, rf)
	}
	for _, cohort := range st.cohorts {
		if err := cache.AddOrUpdateCohort(cohort); err != nil {
			return Decision{Case: dir, Outcome: "error", Message: err.Error()}
		}
	}
	for _, cq := range st.queues {
		if err := cache.AddClusterQueue(ctx, cq); err != nil {
			return Decision{Case: dir, Outcome: "error", Message: err.Error()}
		}
	}
	// AddClusterQueue takes each queue's LocalQueues and admitted Workloads from the client,
	// as the cache does when a ClusterQueue is added after them (a controller restart).

	var cqName kueue.ClusterQueueReference
	for _, lq := range st.localQueues {
		if lq.Namespace == incoming.Namespace && kueue.LocalQueueName(lq.Name) == incoming.Spec.QueueName {
			cqName = lq.Spec.ClusterQueue
		}
	}
	snapshot, err := cache.Snapshot(ctx)
	if err != nil {
		return Decision{Case: dir, Outcome: "error", Message: err.Error()}
	}
	if cqName == "" || snapshot.ClusterQueue(cqName) == nil {
		d.Outcome, d.Reason = "misconfigured", kueue.WorkloadQuotaReservedReasonMisconfigured
		return d
	}
	if snapshot.InactiveClusterQueueSets.Has(cqName) {
		d.Outcome, d.Reason = "misconfigured", kueue.WorkloadQuotaReservedReasonSuspended
		return d
	}

	info := workload.NewInfo(incoming)
	info.ClusterQueue = cqName
	preemptor := preemption.New(cl, workload.Ordering{}, events.NewFakeRecorder(100), st.fairSharing, false,
		clocktesting.NewFakeClock(now), nil, expectations.New(), nil)
	cq := snapshot.ClusterQueue(cqName)
	assigner := flavorassigner.New(info, cq, snapshot.ResourceFlavors, st.fairSharing != nil,
		preemption.NewOracle(preemptor, snapshot), nil, configapi.QuotaCheckStrategy(""),
		resources.NewResourceFormatter(), 1)
	assignment := assigner.Assign(ctx, nil)
	mode := assignment.RepresentativeMode()
	d.Mode = mode.String()
	d.Borrow = assignment.Borrowing
	for _, ps := range assignment.PodSets {
		flavors := map[string]string{}
		for resource, fa := range ps.Flavors {
			if fa != nil {
				flavors[string(resource)] = string(fa.Name)
			}
		}
		d.PodSets = append(d.PodSets, PodSet{Name: string(ps.Name), Flavors: flavors})
	}
	switch mode {
	case flavorassigner.Fit:
		d.Outcome = "admit"
	case flavorassigner.Preempt:
		targets := preemptor.GetTargets(ctx, *info, assignment, snapshot)
		if len(targets) == 0 {
			d.Outcome, d.Reason = "wait", kueue.WorkloadQuotaReservedReasonWaitingForQuota
			break
		}
		d.Outcome = "preempt"
		for _, t := range targets {
			d.Victims = append(d.Victims, Victim{
				Workload: t.WorkloadInfo.Obj.Namespace + "/" + t.WorkloadInfo.Obj.Name,
				Reason:   t.Reason,
			})
		}
		sort.Slice(d.Victims, func(i, j int) bool { return d.Victims[i].Workload < d.Victims[j].Workload })
	default:
		d.Reason = assignment.NoFitReason
		switch d.Reason {
		case kueue.WorkloadQuotaReservedReasonExceedsMaxQuota, kueue.WorkloadQuotaReservedReasonNoMatchingFlavor:
			d.Outcome = "never"
		default:
			d.Outcome = "wait"
		}
		d.Message = assignment.Message()
	}
	return d
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: oracle CASE_DIR...")
		os.Exit(2)
	}
	// Kueue names why a Workload does not fit (ExceedsMaxQuota, NoMatchingFlavor,
	// WaitingForQuota) only with this gate (beta, off by default in v0.19); the scheduling
	// itself does not change with it.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		string(features.UnadmittedWorkloadsObservability): true,
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for _, dir := range os.Args[1:] {
		if err := encoder.Encode(decide(dir)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
