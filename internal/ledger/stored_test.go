package ledger

import (
	"slices"
	"testing"
)

func TestErasureScopeConsider(t *testing.T) {
	var sc ErasureScope
	own := ChainRow{AgentID: "x", Record: ChainRecord{Type: SummaryType, Seq: 3}, StoredHash: []byte{1}, HeadHash: []byte{2}}
	sum := &Summary{AgentID: "x", Seq: 3}
	bought := ChainRow{AgentID: "s", Record: ChainRecord{Seq: 1}, Event: StoredEvent{Event: Event{BuyerID: "x"}}}
	other := ChainRow{AgentID: "s", Record: ChainRecord{Seq: 2}, Event: StoredEvent{Event: Event{BuyerID: "x-2"}}}
	for _, r := range []*ChainRow{&own, &bought, &other} {
		sc.Consider("x", r, map[int64]*Summary{3: sum})
	}
	own.StoredHash[0] = 9 // the caller reuses its row
	if len(sc.Records) != 2 || sc.Records[0].Summary != sum || sc.Records[0].StoredHash[0] != 1 || sc.Records[1].AgentID != "s" {
		t.Errorf("scope %+v", sc.Records)
	}
}

func TestErasureDigestBytes(t *testing.T) {
	e := Erasure{Digests: []Hash{{1}, {2, 3}}}
	b := e.DigestBytes()
	if len(b) != 2*HashSize || b[0] != 1 || b[HashSize] != 2 || b[HashSize+1] != 3 {
		t.Fatalf("DigestBytes = %x", b)
	}
	var back Erasure
	back.SetDigests(append(b, 7))
	if !slices.Equal(back.Digests, e.Digests) {
		t.Errorf("SetDigests = %x", back.Digests)
	}
}

func TestCorrectionSetRequested(t *testing.T) {
	for _, c := range []Correction{
		{CorrectionRequest: CorrectionRequest{Action: ActionStatus}, ToStatus: Refunded, ToAgent: "a"},
		{CorrectionRequest: CorrectionRequest{Action: ActionReattribute}, ToStatus: Verified, ToAgent: "b"},
		{CorrectionRequest: CorrectionRequest{Action: ActionVoid}, ToStatus: Verified, ToAgent: "a"},
	} {
		c.SetRequested()
		want := CorrectionRequest{Action: c.Action}
		switch c.Action {
		case ActionStatus:
			want.Status = Refunded
		case ActionReattribute:
			want.AgentID = "b"
		}
		if c.CorrectionRequest != want {
			t.Errorf("%s: %+v, want %+v", c.Action, c.CorrectionRequest, want)
		}
	}
}

func TestCheckConsent(t *testing.T) {
	if err := CheckConsent("disclosure-1", "agent:a"); err != nil {
		t.Error(err)
	}
	for _, bad := range [][2]string{{"", "op"}, {"v1", ""}, {"v 1", "op"}} {
		if err := CheckConsent(bad[0], bad[1]); err == nil {
			t.Errorf("CheckConsent(%q, %q) accepted", bad[0], bad[1])
		}
	}
}
