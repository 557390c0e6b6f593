package hooks

import (
	"fmt"

	"github.com/jaco-project/jaco/agent/exec"
)

// A hook replica's secrets and configs (exec.File) live in a tmpfs of its
// own in Replica.Dir (exec.Replica.WriteFiles), never on a disk. Its
// hooks find secrets in $JACO_SECRETS_DIR (a secret at its target, a
// file name by default: $JACO_SECRETS_DIR/db_pass) and configs in
// $JACO_CONFIGS_DIR (a config at its absolute target below it:
// $JACO_CONFIGS_DIR/etc/app.conf), each with its mode and owner; a
// variable is set only when the spec names a file of its kind. Prepare
// makes the tmpfs (again when it is gone, as after an agent restart
// before the replica started) and takes it away when it fails; Remove
// unmounts it after cleanup ran.

// prepareFiles refuses a replica whose secrets or configs did not all
// reach the node, then writes them to its tmpfs.
func (c *controller) prepareFiles() error {
	if err := c.rep.CheckFiles(); err != nil {
		return fmt.Errorf("replica %s: %w", c.id(), err)
	}
	if err := c.rep.WriteFiles(); err != nil {
		return fmt.Errorf("replica %s: %w", c.id(), err)
	}
	return nil
}

// filesEnv names the replica's directories of secrets and configs.
func (c *controller) filesEnv() []string {
	var env []string
	spec := c.rep.Task.GetSpec()
	if len(spec.GetSecrets()) > 0 {
		env = append(env, exec.EnvSecretsDir+"="+c.rep.SecretsHostDir())
	}
	if len(spec.GetConfigs()) > 0 {
		env = append(env, exec.EnvConfigsDir+"="+c.rep.ConfigsHostDir())
	}
	return env
}
