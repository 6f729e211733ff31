package bench

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// PartialFileFor is where the samples of an incomplete run into outDir are kept: in
// the user's cache directory (the system's temporary one without it), named for
// outDir's absolute path, so that an interrupted run leaves outDir, and the repository
// that holds bench/results, as they were, and --resume with the same --out finds them.
func PartialFileFor(outDir string) string {
	abs, err := filepath.Abs(outDir)
	if err != nil {
		abs = outDir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "kroll", "bench", fmt.Sprintf("%x", sum[:8]), resultsJSON)
}

// writePartial saves the samples so far into file (its directory made if missing).
func (r *Results) writePartial(file string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return WriteFileAtomic(file, append(data, '\n'))
}

// readEarlier is the earlier run --resume continues: the incomplete one in partial,
// or else the complete one in record; nil when there is neither.
func readEarlier(partial, record string) (*Results, error) {
	for _, file := range []string{partial, record} {
		r, err := ReadResults(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		return r, err
	}
	return nil, nil
}

// WriteFileAtomic replaces path with data whole: it writes a temporary file in path's
// directory and renames it over path, so that a reader, or a run stopped halfway,
// sees the old content or the new, never a part. The file is left readable by all
// (0644), as os.WriteFile(…, 0o644) would make it.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
