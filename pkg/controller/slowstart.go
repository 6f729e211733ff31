package controller

import "sync"

// SlowStartBatch calls fn count times in batches of initial, 2·initial, 4·initial, …,
// each batch in parallel, and stops after the first batch with an error. It returns how
// many calls succeeded and the first error. A panic in fn is raised in the caller once
// its batch has returned.
func SlowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining, succeeded := count, 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		var panics Panics
		for i := 0; i < batch; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer panics.Catch()
				if err := fn(); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		panics.Raise()
		close(errs)
		succeeded += batch - len(errs)
		if err, failed := <-errs; failed {
			return succeeded, err
		}
		remaining -= batch
	}
	return succeeded, nil
}
