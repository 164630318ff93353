unleash.isEnabled('ignored-nested-rule');
