package voterset

import "testing"

func TestTargetVoters(t *testing.T) {
	for _, tc := range []struct{ managers, voters int }{
		{-1, 0}, {0, 0},
		{1, 1}, {2, 1}, {3, 3}, {4, 3}, {5, 5}, {6, 5},
		{7, 7}, {8, 7}, {9, 7}, {100, 7},
	} {
		if got := TargetVoters(tc.managers); got != tc.voters {
			t.Errorf("TargetVoters(%d) = %d, want %d", tc.managers, got, tc.voters)
		}
	}
	for n := 1; n <= 20; n++ {
		if v := TargetVoters(n); v%2 == 0 || v > n || v > MaxVoters {
			t.Errorf("TargetVoters(%d) = %d: want odd, at most %d and at most MaxVoters", n, v, n)
		}
	}
}
