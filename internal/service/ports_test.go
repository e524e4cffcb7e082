package service_test

import (
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// Both back ends provide every port.
var (
	_ service.Backend = (*sqlite.Store)(nil)
	_ service.Backend = (*postgres.Store)(nil)
)
