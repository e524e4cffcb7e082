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
