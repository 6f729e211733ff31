package rollout

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func TestPartitionedNewReplicas(t *testing.T) {
	tests := []struct {
		name              string
		oldSize, newSize  int32
		partition, wanted int32
	}{
		// 20 replicas, maxSurge 5: 22 pods allowed.
		{"no partition: as far as the surge allows", 20, 0, 0, 5},
		{"partition 18: 20−18 = 2, not 5", 20, 0, 18, 2},
		{"partition 10 with 2 new and 18 old: min(2+5, 10) = 7", 18, 2, 10, 7},
		{"at the partition: stays", 10, 10, 10, 10},
		{"partition raised above what is updated: never scaled down", 10, 10, 15, 10},
	}
	for _, tt := range tests {
		d := newDeployment(20, "5", "5")
		old := newRS("old", tt.oldSize, tt.oldSize, 0)
		nrs := newRS("new", tt.newSize, tt.newSize, 1)
		if got := PartitionedNewReplicas(d, []*appsv1.ReplicaSet{old, nrs}, nrs, nil, tt.partition); got != tt.wanted {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.wanted)
		}
	}
}

func TestPartitionedScaleDown(t *testing.T) {
	tests := []struct {
		name      string
		old       []*appsv1.ReplicaSet
		newRS     *appsv1.ReplicaSet
		partition int32
		want      []Scale
	}{
		{"no partition: 22 − 15 − 2 = 5", []*appsv1.ReplicaSet{newRS("a", 20, 20, 0)}, newRS("n", 2, 0, 1), 0,
			[]Scale{{"a", 20, 15}}},
		{"partition 18: only 2 go", []*appsv1.ReplicaSet{newRS("a", 20, 20, 0)}, newRS("n", 2, 0, 1), 18,
			[]Scale{{"a", 20, 18}}},
		{"at the partition: nothing", []*appsv1.ReplicaSet{newRS("a", 18, 18, 0)}, newRS("n", 2, 2, 1), 18, nil},
		{"two old ReplicaSets, oldest first: 6 + 6 at partition 10 takes 2 from the oldest",
			[]*appsv1.ReplicaSet{newRS("a", 6, 6, 0), newRS("b", 6, 6, 1)}, newRS("n", 10, 10, 2), 10,
			[]Scale{{"a", 6, 4}}},
	}
	for _, tt := range tests {
		d := newDeployment(20, "5", "5")
		if got := PartitionedScaleDown(d, tt.old, tt.newRS, tt.partition); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestPartitionedScale(t *testing.T) {
	tests := []struct {
		name               string
		replicas           int32
		old                []*appsv1.ReplicaSet
		newSize, partition int32
		want               []Scale
	}{
		{"20→40 at partition 10: old 10, new 30", 40, []*appsv1.ReplicaSet{newRS("a", 10, 10, 0)}, 10, 10,
			[]Scale{{"a", 10, 10}, {"n", 10, 30}}},
		{"40→20 at partition 10: old 10, new 10", 20, []*appsv1.ReplicaSet{newRS("a", 10, 10, 0)}, 30, 10,
			[]Scale{{"a", 10, 10}, {"n", 30, 10}}},
		{"20→40 at 50% (20 of 40): old grows to 20", 40, []*appsv1.ReplicaSet{newRS("a", 10, 10, 0)}, 10, 20,
			[]Scale{{"a", 10, 20}, {"n", 10, 20}}},
		{"20→10 at 50% (5 of 10): old 5, new 5", 10, []*appsv1.ReplicaSet{newRS("a", 10, 10, 0)}, 10, 5,
			[]Scale{{"a", 10, 5}, {"n", 10, 5}}},
		{"two old shrink oldest first: 6 + 6 to 10 of 10", 10, []*appsv1.ReplicaSet{newRS("a", 6, 6, 0), newRS("b", 6, 6, 1)}, 8, 10,
			[]Scale{{"a", 6, 4}, {"b", 6, 6}, {"n", 8, 0}}},
		{"growth goes to the newest old one", 40, []*appsv1.ReplicaSet{newRS("a", 4, 4, 0), newRS("b", 6, 6, 1)}, 10, 20,
			[]Scale{{"a", 4, 4}, {"b", 6, 16}, {"n", 10, 20}}},
	}
	for _, tt := range tests {
		d := newDeployment(tt.replicas, "5", "5")
		got, ok := PartitionedScale(d, newRS("n", tt.newSize, tt.newSize, 5), tt.old, tt.partition)
		if !ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v (%v), want %+v", tt.name, got, ok, tt.want)
		}
	}
}

// Where PartitionedScale has nothing to hold (no partition, no new ReplicaSet, no old
// pods, or no change of replicas), it spreads replicas as ProportionalScale does; the
// numbers are worked by hand from that rule, not by calling it.
func TestPartitionedScale_fallsBackToTheProportionalRule(t *testing.T) {
	tests := []struct {
		name      string
		replicas  int32
		old       []*appsv1.ReplicaSet
		newRS     *appsv1.ReplicaSet
		partition int32
		want      []Scale
		wantOK    bool
	}{
		// Sized for 20 (max 25) and still 20: not resized, so the partition holds
		// nothing. 25 allowed − (12+10) = 3 to add; each was sized for 25, so its share
		// is round(size·25/25) − size = 0, and the 3 left over go to the largest, a.
		{"paused mid-surge at partition 10, replicas unchanged: the 3 surge pods left go to the largest",
			20, []*appsv1.ReplicaSet{annotated(newRS("a", 12, 12, 0), "20", "25")}, annotated(newRS("n", 10, 10, 1), "20", "25"), 10,
			[]Scale{{"a", 12, 15}, {"n", 10, 10}}, true},
		// 20→40, surge 5: 45 allowed − 20 = 25 to add. Equal sizes, so the newer, n,
		// comes first: round(10·45/25) − 10 = 8 each, 25 − 16 = 9 left to n → 27 and 18.
		{"no partition, 20→40: 8 each in proportion, the 9 left to the newer of the two largest",
			40, []*appsv1.ReplicaSet{annotated(newRS("a", 10, 10, 0), "20", "25")}, annotated(newRS("n", 10, 10, 1), "20", "25"), 0,
			[]Scale{{"n", 10, 27}, {"a", 10, 18}}, true},
		// No old pods: the new ReplicaSet is the only one with pods and takes replicas.
		{"partition 10 but no old pods: the new ReplicaSet takes all 30",
			30, []*appsv1.ReplicaSet{newRS("a", 0, 0, 0)}, annotated(newRS("n", 20, 20, 1), "20", "25"), 10,
			[]Scale{{"n", 20, 30}}, true},
		// No new ReplicaSet yet: the only old one with pods takes replicas.
		{"partition 10 but no new ReplicaSet: the one old ReplicaSet takes all 30",
			30, []*appsv1.ReplicaSet{annotated(newRS("a", 20, 20, 0), "20", "25")}, nil, 10,
			[]Scale{{"a", 20, 30}}, true},
		{"one ReplicaSet already at replicas: nothing to do",
			20, []*appsv1.ReplicaSet{newRS("a", 0, 0, 0)}, annotated(newRS("n", 20, 20, 1), "20", "25"), 10,
			nil, false},
	}
	for _, tt := range tests {
		d := newDeployment(tt.replicas, "5", "5")
		got, ok := PartitionedScale(d, tt.newRS, tt.old, tt.partition)
		if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v (%v), want %+v (%v)", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}
