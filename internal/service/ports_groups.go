package service

import (
	"context"

	"github.com/swarmscore/swarmscore/internal/appeal"
)

// The ports of each group of use cases: the narrow ports of ports*.go that
// its use cases call, and nothing else, so that a use case cannot reach a
// store it has no business with. Every back end implements all of them
// (Backend); New hands it to each group as only its ports.
type (
	// IngestStore is what Ingestion uses: it records events.
	IngestStore interface {
		Ingester
	}

	// CertificateStore is what Certificates uses: the score cache, and the
	// ledger's agents, counts and records (for scores as of an instant and
	// the agent pages' history and window), and the appeals' summaries (an
	// agent page names the open ones).
	CertificateStore interface {
		ScoreStore
		AgentReader
		CountReader
		RecordReader
		AppealSummaries(ctx context.Context) ([]appeal.Appeal, error)
	}

	// VerifyStore is what Verifier uses to judge a passport against the
	// ledger (L2) and to find it revoked.
	VerifyStore interface {
		CachedScores
		CountReader
		ChangeReader
		PassportReader
	}

	// KeysStore is what Keys uses: the keyring, and the passports a
	// rotation re-issues.
	KeysStore interface {
		KeyStore
		StaleFinder
		ScoreRefresher
	}

	// TokensStore is what Tokens uses: the tokens, and the agents an
	// agent's token may name.
	TokensStore interface {
		TokenStore
		AgentReader
	}

	// CorrectionsStore is what Corrections uses: corrections, appeals, the
	// issued passports an appeal disputes and the events it names.
	CorrectionsStore interface {
		AppealStore
		Corrector
		PassportReader
		EventReader
	}

	// RightsStore is what Rights uses: consent, an agent's records and
	// passports, and erasure.
	RightsStore interface {
		ConsentStore
		RecordReader
		PassportLister
		ErasureStore
	}

	// SignalsStore is what Signals uses: the signals' figures and the chain
	// walk whose breaks they report.
	SignalsStore interface {
		SignalStore
		AgentReader
		ChainWalker
	}

	// AuditStore is what Audit uses: checkpoints, retention, and what an
	// audit bundle is read from.
	AuditStore interface {
		CheckpointStore
		RetentionStore
		AgentReader
		CountReader
		PassportLister
		ErasureLister
		ChainWalker
		HoldReader
	}
)
